/**
 * Calls through Twilio media streams (docs/telephony.md, "A Twilio number"). Three ways in, all
 * on the app's HTTP server:
 *
 * - `POST /twilio/voice`: the number's voice webhook (and the TwiML URL of the calls we place).
 *   Its X-Twilio-Signature is checked with the number's auth token (403 otherwise); it answers
 *   `<Connect><Stream>` to our WebSocket with a stream ticket (src/media/twilio/stream-ticket.ts).
 * - `GET /twilio/stream` (WebSocket): Twilio's media stream. The start's ticket is checked, then
 *   the call runs on a MediaStreamEndpoint: an inbound call is admitted on the number's inbound
 *   agent; an outbound call (registered by create-phone-call) becomes ongoing, as answered.
 * - `POST /twilio/status`: status callbacks of the calls we place; an unanswered one ends
 *   `dial_busy`, `dial_no_answer` or `dial_failed`.
 *
 * Placing calls and transfers (the live call's TwiML replaced by `<Dial>`) go through Twilio's REST
 * API (src/media/twilio/twilio-rest.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { CappedMap } from '../../lib/capped-map.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Unanswered } from '../../services/phone-call.service.ts';
import { claimUpgrade, type Transport, type TransportContext, type TransportReply, type TransportRequest } from '../transport.ts';
import { inboundAdmission } from '../inbound-admission.ts';
import { MediaStreamEndpoint, type StreamStart } from './media-stream.endpoint.ts';
import { parseFormBody, verifyTwilioSignature, type FormParams } from './signature.ts';
import { readTicket, STREAM_TICKET_TTL_MS, ticketHolds, ticketParameters } from './stream-ticket.ts';
import { connectStreamTwiml, dialTwiml, MAX_STREAM_MESSAGE_CHARS, rejectTwiml, TWILIO_MULAW, twilioDialect } from './stream-protocol.ts';
import { type TwilioCredentials, TwilioRest } from './twilio-rest.ts';

export const TWILIO_VOICE_PATH = '/twilio/voice';
export const TWILIO_STATUS_PATH = '/twilio/status';
export const TWILIO_STREAM_PATH = '/twilio/stream';
/** Twilio's final statuses of a call that was not answered, as our reasons. */
const UNANSWERED: Readonly<Record<string, Unanswered>> = { busy: 'dial_busy', 'no-answer': 'dial_no_answer', failed: 'dial_failed', canceled: 'dial_failed' };
/** How long Twilio lets the callee's phone ring, seconds. */
const RING_TIMEOUT_SECONDS = 30;
/** Our call ids, as they come back in the query of our own URLs. */
const CALL_ID = /^call_[A-Za-z0-9]{1,64}$/;
/** How long Twilio has to send the stream's start after the socket opens, ms. */
const START_TIMEOUT_MS = 10_000;

/** A Twilio number we hold: its account and credentials, and whether it answers calls. */
export interface TwilioNumber {
  accountId: string;
  phoneNumber: string;
  credentials: TwilioCredentials;
  /** False when no inbound agent is bound: inbound calls are rejected. */
  answersInbound: boolean;
}

/** What the transport needs of the phone numbers and phone calls (src/services/...; the runtime wires it). */
export interface TwilioLines {
  /** The Twilio number `phoneNumber` (E.164), with its auth token; undefined when we hold no such Twilio number. */
  findTwilioNumber(phoneNumber: string): Promise<TwilioNumber | undefined>;
}


export class TwilioTransport {
  readonly #context: TransportContext;
  readonly #lines: TwilioLines;
  readonly #log: Logger;
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_STREAM_MESSAGE_CHARS, perMessageDeflate: false, clientTracking: true });
  readonly #publicBase: string;
  readonly #now: () => number;
  #closed = false;
  /** CallSids whose stream has started here: a ticket is good for one stream (a replay is refused). */
  readonly #started = new CappedMap<string, true>(100_000);

  readonly #rest: TwilioRest;

  constructor(context: TransportContext, lines: TwilioLines, rest: TwilioRest, now: () => number = Date.now) {
    this.#context = context;
    this.#lines = lines;
    this.#log = context.log.child({ transport: 'twilio' });
    this.#publicBase = context.publicBaseUrl.replace(/\/+$/, '');
    this.#now = now;
    this.#rest = rest;
    context.http.post(TWILIO_VOICE_PATH, (request) => this.#voice(request));
    context.http.post(TWILIO_STATUS_PATH, (request) => this.#status(request));
    context.phone.calls.useDialer('twilio', {
      dial: async (call, number, reach, to) => {
        if (reach.kind !== 'twilio') throw new Error('not a Twilio number');
        try {
          return await this.dial({ phoneNumber: number.phone_number, credentials: { accountSid: reach.accountSid, authToken: reach.authToken } }, call.call_id, to);
        } catch (error) {
          this.#log.warn({ err: error, callId: call.call_id }, 'twilio refused to place a call');
          throw error;
        }
      },
    });
    context.server.on('upgrade', this.#onUpgrade);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#context.server.off('upgrade', this.#onUpgrade);
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  /** The voice webhook: a signed request for a number we hold gets the stream; anything else 403. */
  async #voice(request: TransportRequest): Promise<TransportReply> {
    const params = parseFormBody(request.body);
    const { CallSid: callSid, AccountSid: accountSid, To: to, From: from, Direction: direction } = params;
    if (![callSid, accountSid, to, from, direction].every((v) => typeof v === 'string')) return forbidden();
    const outbound = (direction as string).startsWith('outbound');
    const number = await this.#verified(request, params, outbound ? (from as string) : (to as string), accountSid as string);
    if (!number) return forbidden();
    const callId = outbound ? (new URL(request.url, 'http://x').searchParams.get('call_id') ?? '') : '';
    if (outbound ? !CALL_ID.test(callId) : !number.answersInbound) return twiml(rejectTwiml());
    // The account's concurrency limit, as for web calls: the caller hears busy (the stream's admission checks it again, atomically).
    if (!outbound && (await this.#context.phone.calls.atConcurrencyLimit(number.accountId))) return twiml(rejectTwiml('busy'));
    // The embedded recogniser full: the caller hears busy rather than a call that ends error_asr.
    if (!outbound && this.#context.registry.recogniserBusy()) return twiml(rejectTwiml('busy'));
    const ticket = ticketParameters(number.credentials.authToken, callSid as string, { number: number.phoneNumber, peer: (outbound ? to : from) as string, direction: outbound ? 'outbound' : 'inbound', callId, expiresAt: this.#now() + STREAM_TICKET_TTL_MS });
    return twiml(connectStreamTwiml(this.#streamUrl(), ticket));
  }

  /**
   * Places the call `callId` (registered by create-phone-call) from `number` to `to` through
   * Twilio's REST API; returns Twilio's CallSid. Its TwiML comes from our voice webhook once
   * answered, its progress to the status callback. Throws TwilioApiError.
   */
  async dial(number: Pick<TwilioNumber, 'phoneNumber' | 'credentials'>, callId: string, to: string): Promise<string> {
    const query = `?call_id=${encodeURIComponent(callId)}`;
    return this.#rest.createCall(number.credentials, {
      to,
      from: number.phoneNumber,
      url: this.#publicBase + TWILIO_VOICE_PATH + query,
      statusCallback: this.#publicBase + TWILIO_STATUS_PATH + query,
      timeoutSeconds: RING_TIMEOUT_SECONDS,
    });
  }

  /** A status callback of a call we placed (signed like the webhook): an unanswered call ends with its reason. */
  async #status(request: TransportRequest): Promise<TransportReply> {
    const params = parseFormBody(request.body);
    const { AccountSid: accountSid, From: from, CallStatus: status } = params;
    if (typeof accountSid !== 'string' || typeof from !== 'string' || typeof status !== 'string') return forbidden();
    const number = await this.#verified(request, params, from, accountSid);
    if (!number) return forbidden();
    const callId = new URL(request.url, 'http://x').searchParams.get('call_id') ?? '';
    const reason = UNANSWERED[status];
    if (reason && CALL_ID.test(callId)) await this.#context.phone.calls.endUnanswered(number.accountId, callId, reason);
    return { status: 204, contentType: 'text/plain', body: '' };
  }

  /** The number, when the request is signed with its auth token for its Twilio account; else undefined. */
  async #verified(request: TransportRequest, params: FormParams, phoneNumber: string, accountSid: string): Promise<TwilioNumber | undefined> {
    if (phoneNumber.length > 32) return undefined;
    const number = await this.#lines.findTwilioNumber(phoneNumber);
    const signature = request.headers['x-twilio-signature'];
    if (!number || number.credentials.accountSid !== accountSid || typeof signature !== 'string') return undefined;
    // Twilio signs the URL it was given: PUBLIC_BASE_URL and the path and query as requested.
    return verifyTwilioSignature(number.credentials.authToken, signature, this.#publicBase + request.url, params) ? number : undefined;
  }

  #streamUrl(): string {
    return this.#publicBase.replace(/^http/i, 'ws') + TWILIO_STREAM_PATH;
  }

  readonly #onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if ((request.url ?? '').split('?')[0] !== TWILIO_STREAM_PATH) return;
    claimUpgrade(request);
    if (this.#closed) {
      socket.destroy();
      return;
    }
    this.#wss.handleUpgrade(request, socket, head, (ws) => {
      const endpoint = new MediaStreamEndpoint(ws, twilioDialect);
      void this.#stream(endpoint).catch((error: unknown) => {
        this.#log.error({ err: error }, 'twilio stream failed to start');
        endpoint.refuse(1011, 'internal error');
      });
    });
  };

  /** A stream opened: its start's ticket is checked, then its call runs on the endpoint. */
  async #stream(endpoint: MediaStreamEndpoint): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const start = await Promise.race([endpoint.started, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), START_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (!start) return endpoint.refuse(1008, 'no start');
    const ticket = readTicket(start.parameters);
    const number = ticket ? await this.#lines.findTwilioNumber(ticket.number) : undefined;
    if (!ticket || !number || number.credentials.accountSid !== start.accountId || !ticketHolds(number.credentials.authToken, start.callId, ticket, this.#now()) || this.#started.has(start.callId)) {
      this.#log.warn('twilio stream refused: no valid ticket');
      return endpoint.refuse(1008, 'forbidden');
    }
    this.#started.set(start.callId, true);
    if (start.encoding !== null && start.encoding !== TWILIO_MULAW) return endpoint.refuse(1003, 'unsupported encoding');
    // A cold transfer leaves the stream for <Dial> (Twilio then stops the stream: that `stop` joins the call's end).
    const credentials = number.credentials;
    endpoint.transfer = (destination) => this.#rest.updateCall(credentials, start.callId, { twiml: dialTwiml(destination) });
    if (ticket.direction === 'inbound') await this.#answerInbound(number, ticket.peer, start, endpoint);
    else await this.#answerOutbound(ticket.callId, endpoint);
  }

  /** A call we placed was answered: the registered call becomes ongoing on the stream. */
  async #answerOutbound(callId: string, endpoint: MediaStreamEndpoint): Promise<void> {
    try {
      await this.#context.registry.answer(callId, endpoint);
    } catch (error) {
      // Answered already, rang out, or the server is shutting down: Twilio hangs up when the stream closes.
      this.#log.warn({ err: error, callId }, 'outbound twilio call not started');
      endpoint.refuse(1008, 'refused');
    }
  }

  /** An inbound call: admitted on the number's inbound agent (its version, or the latest) and run on the stream. */
  async #answerInbound(number: TwilioNumber, caller: string, start: StreamStart, endpoint: MediaStreamEndpoint): Promise<void> {
    const stored = await this.#context.phone.numbers.findForInbound(number.phoneNumber);
    if (!stored) return endpoint.refuse(1008, 'no inbound agent');
    try {
      const admission = await inboundAdmission(this.#context.phone, stored, { fromNumber: caller, telephonyIdentifier: start.callId });
      if (!admission) return endpoint.refuse(1008, 'no inbound agent');
      await this.#context.registry.admit(admission, endpoint);
    } catch (error) {
      // Refused (shutting down, the account's limit, an agent gone): the caller hears the line close.
      this.#log.warn({ err: error }, 'inbound twilio call refused');
      endpoint.refuse(1011, 'refused');
    }
  }
}

/** The transport's registration (src/media/transports.ts). */
export const twilioTransport: Transport<TwilioTransport> = {
  id: 'twilio',
  start: (context) => new TwilioTransport(context, numbersOf(context), new TwilioRest(context.phone.twilioApiBaseUrl)),
};

/** The Twilio numbers as the transport reads them: the numbers service, Twilio numbers only. */
function numbersOf(context: TransportContext): TwilioLines {
  return {
    async findTwilioNumber(phoneNumber) {
      const number = await context.phone.numbers.findForInbound(phoneNumber);
      if (!number) return undefined;
      const reach = context.phone.numbers.reachOf(number);
      if (reach.kind !== 'twilio') return undefined;
      return { accountId: number.account_id, phoneNumber: number.phone_number, credentials: { accountSid: reach.accountSid, authToken: reach.authToken }, answersInbound: number.inbound_agent_id !== null || number.inbound_webhook_url !== null };
    },
  };
}

function twiml(body: string): TransportReply {
  return { status: 200, contentType: 'text/xml; charset=utf-8', body };
}

function forbidden(): TransportReply {
  return { status: 403, contentType: 'application/json; charset=utf-8', body: JSON.stringify({ status: 'error', code: 'forbidden', message: 'The request is not signed by Twilio for a number of this server.' }) };
}
