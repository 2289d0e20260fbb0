/**
 * A SIP dialog (RFC 3261 12) as the SIP endpoint keeps one per call, inbound (./sip.transport.ts)
 * or placed by us (./sip-dialer.ts), and the peer its messages go to. The RFC's timers both share.
 */
import type { SipCallEndpoint } from './sip.endpoint.ts';
import type { SipRequest } from './sip-message.ts';
import type { SipStream } from './sip-stream.ts';

/** RFC 3261 timer T1 (round-trip estimate), ms; timers B, F and H are 64*T1. */
export const T1_MS = 500;
/** RFC 3261 timer T2 (the longest retransmit interval of a non-INVITE request or a 2xx), ms. */
export const T2_MS = 4_000;

/** A REFER of ours in flight: settled by the far end's NOTIFY with a final status (RFC 3515 2.4.5). */
export interface PendingTransfer {
  settle(outcome: { ok: true } | { ok: false; why: string }): void;
}

/** Where a message came from and where its answer goes: a UDP address, or a TCP connection (`stream`). */
export interface SipPeer {
  address: string;
  port: number;
  /** The TCP connection it came on; null: UDP. */
  stream: SipStream | null;
}

export interface Dialog {
  callId: string;
  localTag: string;
  /** The far end's address (responses and in-dialog requests go back to it: symmetric signalling), and its TCP connection when the call runs over TCP. */
  remote: SipPeer;
  /** The caller's INVITE of an inbound call; null for a call we placed. */
  invite: SipRequest | null;
  /** Our side's From of requests we send in the dialog (with our tag), and the far end's (its To). */
  local: string;
  peer: string;
  /** The Request-URI of our requests in the dialog: the far end's Contact. */
  target: string;
  /** The last response to the INVITE, sent again when the INVITE is retransmitted. */
  lastResponse: Buffer | null;
  state: 'proceeding' | 'answered' | 'confirmed' | 'ended';
  endpoint: SipCallEndpoint | null;
  retransmit: NodeJS.Timeout | null;
  cancelled: boolean;
  /** The CSeq of our last request in the dialog. */
  cseq: number;
  /** Our REFER, once the agent transfers the call. */
  transfer: PendingTransfer | null;
}
