/**
 * The ticket a verified voice webhook gives the media stream it opens: the stream's WebSocket
 * carries no signature of ours, so the webhook (whose X-Twilio-Signature was checked) hands Twilio
 * `<Parameter>`s that come back in the stream's `start`, MACed with the number's auth token over
 * the CallSid, the number, the far party's number, the direction, our call id and an expiry. A stream whose start lacks a
 * valid ticket for its own CallSid is refused; a ticket is worthless for any other call.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long Twilio has to open the stream after our webhook answered, ms. */
export const STREAM_TICKET_TTL_MS = 60_000;

export interface StreamTicket {
  /** The Twilio number (E.164) the call is on. */
  number: string;
  /** The far party's number as Twilio gave it (the caller of an inbound call, the callee of an outbound one). */
  peer: string;
  direction: 'inbound' | 'outbound';
  /** Our call's id for an outbound call (registered by create-phone-call); empty for inbound. */
  callId: string;
  /** Epoch ms after which the ticket is refused. */
  expiresAt: number;
}

function mac(authToken: string, callSid: string, t: StreamTicket): string {
  return createHmac('sha256', authToken).update(`${callSid}\n${t.number}\n${t.peer}\n${t.direction}\n${t.callId}\n${t.expiresAt}`).digest('base64url');
}

/** The ticket as the stream's custom parameters. */
export function ticketParameters(authToken: string, callSid: string, ticket: StreamTicket): Record<string, string> {
  return { number: ticket.number, peer: ticket.peer, direction: ticket.direction, call_id: ticket.callId, expires_at: String(ticket.expiresAt), ticket: mac(authToken, callSid, ticket) };
}

/** The ticket's claims from a start's parameters, unchecked: the number names the auth token to check them with. */
export function readTicket(parameters: Readonly<Record<string, string>>): (StreamTicket & { mac: string }) | null {
  const { number, peer, direction, call_id: callId, expires_at: expires, ticket } = parameters;
  if (!number || peer === undefined || peer.length > 64 || (direction !== 'inbound' && direction !== 'outbound') || callId === undefined || !expires || !/^\d{1,15}$/.test(expires) || !ticket) return null;
  return { number, peer, direction, callId, expiresAt: Number(expires), mac: ticket };
}

/** True when the ticket was made with `authToken` for `callSid` and has not expired at `now`. */
export function ticketHolds(authToken: string, callSid: string, ticket: StreamTicket & { mac: string }, now: number): boolean {
  if (ticket.expiresAt < now) return false;
  const expected = Buffer.from(mac(authToken, callSid, ticket));
  const given = Buffer.from(ticket.mac);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
