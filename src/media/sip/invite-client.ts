/**
 * An outbound INVITE over UDP or TCP (RFC 3261 17.1.1, the INVITE client transaction), as the SIP
 * endpoint places a create-phone-call call at a trunk: retransmitted at T1, 2*T1, ... (timer A)
 * until a response (over UDP only: TCP is reliable, 17.1.1.2), given up after 64*T1 without one
 * (timer B); provisional responses (100, 180,
 * 183) stop the retransmission; a final non-2xx is ACKed in its transaction, a 2xx by a new ACK
 * (resent when the 2xx is). A 401 or 407 is answered once per challenge with the trunk's digest
 * credentials (./digest.ts): the INVITE again with Authorization or Proxy-Authorization and the
 * next CSeq. Past the ring bound the INVITE is cancelled (CANCEL, once the far end has answered
 * provisionally, as 9.1 requires). A 2xx that comes after we gave up is ACKed and handed to
 * `lateAnswer`, which hangs it up. A provisional response with an SDP answer (a 183 Session
 * Progress's early media, RFC 3960) is handed to `earlyMedia`.
 */
import { randomBytes } from 'node:crypto';
import type { DisconnectionReason } from '../../domain/call-status.ts';
import { digestAuthorization, pickDigestChallenge } from './digest.ts';
import { T1_MS, T2_MS } from './sip-dialog.ts';
import { type SipResponse, uriOf, writeSipMessage } from './sip-message.ts';

export type Unanswered = Extract<DisconnectionReason, 'dial_busy' | 'dial_no_answer' | 'dial_failed'>;

export type InviteOutcome =
  /** The callee answered: its 2xx (with the SDP answer and its To tag); our ACK is sent. */
  | { kind: 'answered'; response: SipResponse; cseq: number }
  /** It did not: why, and the final status when there was one (null: no answer in time, or no response at all). */
  | { kind: 'unanswered'; reason: Unanswered; status: number | null };

/** What ends a call unanswered, by final status (Retell's reasons). */
export function unansweredReason(status: number): Unanswered {
  if (status === 486 || status === 600) return 'dial_busy';
  if (status === 408 || status === 480 || status === 487) return 'dial_no_answer';
  return 'dial_failed';
}

export interface OutboundInviteOptions {
  callId: string;
  /** `sip:+14155550100@trunk.example.com:5060` */
  requestUri: string;
  /** Our From, with its tag. */
  from: string;
  /** The callee's To (no tag). */
  to: string;
  /** Our Contact URI. */
  contact: string;
  /** Our Via's sent-by (`host:port`). */
  sentBy: string;
  /** Sent over TCP: no retransmission (timer A, and timer E of the CANCEL), Via names TCP. */
  reliable: boolean;
  /** The SDP offer. */
  sdp: string;
  /** The trunk's credentials, for its digest challenges; null: a challenge fails the call. */
  credentials: { username: string; password: string } | null;
  /** How long the callee may ring before the INVITE is cancelled, ms. */
  ringTimeoutMs: number;
  send(message: Buffer): void;
  /** A 2xx that came after we gave up: already ACKed; the caller hangs it up (a BYE). */
  lateAnswer(response: SipResponse, cseq: number): void;
  /** A provisional response carrying SDP while the INVITE rings (early media): each one, in order. */
  earlyMedia(response: SipResponse): void;
}

const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY';

export class OutboundInvite {
  readonly #o: OutboundInviteOptions;
  #cseq = 1;
  #branch = newBranch();
  #authorization: [string, string] | null = null;
  /** Challenges answered already, by status (one retry per challenge). */
  readonly #answered = new Set<number>();
  #state: 'calling' | 'proceeding' | 'cancelling' | 'done' = 'calling';
  #invite: Buffer = Buffer.alloc(0);
  /** The ACK of the 2xx, resent when the 2xx is. */
  #ack: Buffer | null = null;
  /** The ACK of the last non-2xx final response, resent when it is. */
  #finalAck: { cseq: number; message: Buffer } | null = null;
  #cancel: Buffer | null = null;
  readonly #timers = new Set<NodeJS.Timeout>();
  #settle: (outcome: InviteOutcome) => void = () => {};
  #settled = false;
  #closed = false;
  /** Timer A's interval now, and how long the INVITE has gone unanswered, ms. */
  #interval = T1_MS;
  #elapsed = 0;
  #retransmit: NodeJS.Timeout | null = null;

  constructor(options: OutboundInviteOptions) {
    this.#o = options;
  }

  /** Sends the INVITE; resolves once it is answered or not (never rejects). */
  start(): Promise<InviteOutcome> {
    const outcome = new Promise<InviteOutcome>((resolve) => (this.#settle = resolve));
    this.#sendInvite();
    this.#after(this.#o.ringTimeoutMs, () => this.#ringedOut());
    return outcome;
  }

  /** A response whose Call-ID is ours. */
  onResponse(response: SipResponse): void {
    if (this.#closed) return;
    const [number, method] = (response.headers.one('cseq') ?? '').split(/\s+/);
    const cseq = Number(number);
    if (method === 'CANCEL') return; // its 200 changes nothing: the INVITE's 487 ends the call
    if (method !== 'INVITE') return;
    if (response.status < 200) {
      if (cseq !== this.#cseq) return;
      this.#stopRetransmit();
      if (this.#state === 'calling') this.#state = 'proceeding';
      // Past the ring bound before any provisional response: the CANCEL may go now (9.1).
      if (this.#state === 'cancelling' && this.#cancel === null) this.#sendCancel();
      else if (this.#state === 'proceeding' && response.status > 100 && /^application\/sdp/i.test(response.headers.one('content-type') ?? '') && response.body.length > 0) this.#o.earlyMedia(response);
      return;
    }
    if (response.status < 300) return this.#onSuccess(response, cseq);
    // A final non-2xx is ACKed in its transaction (17.1.1.3), again when it is retransmitted.
    if (this.#finalAck?.cseq === cseq) return this.#o.send(this.#finalAck.message);
    if (cseq !== this.#cseq) return;
    this.#stopRetransmit();
    this.#finalAck = { cseq, message: this.#nonSuccessAck(response) };
    this.#o.send(this.#finalAck.message);
    if ((response.status === 401 || response.status === 407) && this.#state !== 'cancelling' && this.#retryWithCredentials(response)) return;
    this.#finish({ kind: 'unanswered', reason: this.#state === 'cancelling' ? 'dial_no_answer' : unansweredReason(response.status), status: response.status });
  }

  /** Stops every timer (the server is shutting down, or the dialog is over). */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#finish({ kind: 'unanswered', reason: 'dial_failed', status: null });
  }

  #onSuccess(response: SipResponse, cseq: number): void {
    // A retransmitted 2xx: our ACK again (13.2.2.4).
    if (this.#ack) return this.#o.send(this.#ack);
    if (cseq !== this.#cseq) return;
    this.#stopRetransmit();
    const to = response.headers.one('to') ?? this.#o.to;
    const target = uriOf(response.headers.one('contact') ?? '') || this.#o.requestUri;
    this.#ack = writeSipMessage(`ACK ${target} SIP/2.0`, [
      ['Via', `SIP/2.0/${this.#o.reliable ? 'TCP' : 'UDP'} ${this.#o.sentBy};branch=${newBranch()};rport`],
      ['Max-Forwards', '70'],
      ['From', this.#o.from],
      ['To', to],
      ['Call-ID', this.#o.callId],
      ['CSeq', `${cseq} ACK`],
      ...(this.#authorization ? [this.#authorization] : []),
    ]);
    this.#o.send(this.#ack);
    // ACKs of retransmitted 2xx are sent for 64*T1 (13.2.2.4); then this transaction is over.
    this.#after(64 * T1_MS, () => {
      this.#closed = true;
    });
    if (this.#settled) return this.#o.lateAnswer(response, cseq);
    this.#state = 'done';
    this.#finish({ kind: 'answered', response, cseq });
  }

  /** A challenge answered with the trunk's credentials: the INVITE again, next CSeq. False when it cannot be. */
  #retryWithCredentials(response: SipResponse): boolean {
    if (!this.#o.credentials || this.#answered.has(response.status)) return false;
    const proxy = response.status === 407;
    const challenge = pickDigestChallenge(response.headers.all(proxy ? 'proxy-authenticate' : 'www-authenticate'));
    if (!challenge) return false;
    this.#answered.add(response.status);
    this.#authorization = [proxy ? 'Proxy-Authorization' : 'Authorization', digestAuthorization(challenge, this.#o.credentials, { method: 'INVITE', uri: this.#o.requestUri })];
    this.#cseq += 1;
    this.#branch = newBranch();
    this.#state = 'calling';
    this.#interval = T1_MS;
    this.#elapsed = 0;
    this.#sendInvite();
    return true;
  }

  #sendInvite(): void {
    this.#invite = writeSipMessage(
      `INVITE ${this.#o.requestUri} SIP/2.0`,
      [
        ['Via', `SIP/2.0/${this.#o.reliable ? 'TCP' : 'UDP'} ${this.#o.sentBy};branch=${this.#branch};rport`],
        ['Max-Forwards', '70'],
        ['From', this.#o.from],
        ['To', this.#o.to],
        ['Call-ID', this.#o.callId],
        ['CSeq', `${this.#cseq} INVITE`],
        ['Contact', `<${this.#o.contact}>`],
        ...(this.#authorization ? [this.#authorization] : []),
        ['Allow', ALLOW],
        ['User-Agent', 'switchboard'],
        ['Content-Type', 'application/sdp'],
      ],
      this.#o.sdp,
    );
    this.#o.send(this.#invite);
    this.#scheduleRetransmit();
  }

  /** Timer A: the INVITE again at T1, 2*T1, 4*T1 ... until a response; timer B: none after 64*T1 fails the call. */
  #scheduleRetransmit(): void {
    this.#retransmit = this.#after(this.#interval, () => {
      this.#elapsed += this.#interval;
      if (this.#state !== 'calling') return;
      if (this.#elapsed >= 64 * T1_MS) return this.#finish({ kind: 'unanswered', reason: 'dial_failed', status: null });
      if (!this.#o.reliable) this.#o.send(this.#invite);
      this.#interval *= 2;
      this.#scheduleRetransmit();
    });
  }

  #stopRetransmit(): void {
    if (this.#retransmit) clearTimeout(this.#retransmit);
    this.#retransmit = null;
  }

  /** The ring bound passed: CANCEL (now, or once a provisional response comes), and the call is not answered. */
  #ringedOut(): void {
    if (this.#state === 'done' || this.#state === 'cancelling') return;
    const wasProceeding = this.#state === 'proceeding';
    this.#state = 'cancelling';
    this.#stopRetransmit();
    if (wasProceeding) this.#sendCancel();
    // The far end's 487 would say the same; a far end that never sends it does not keep the call ringing.
    this.#finish({ kind: 'unanswered', reason: 'dial_no_answer', status: null });
  }

  /** CANCEL (9.1): the INVITE's Request-URI, Call-ID, From, To, CSeq number and top Via; retransmitted as a non-INVITE request (timer E). */
  #sendCancel(): void {
    this.#cancel = writeSipMessage(`CANCEL ${this.#o.requestUri} SIP/2.0`, [
      ['Via', `SIP/2.0/${this.#o.reliable ? 'TCP' : 'UDP'} ${this.#o.sentBy};branch=${this.#branch};rport`],
      ['Max-Forwards', '70'],
      ['From', this.#o.from],
      ['To', this.#o.to],
      ['Call-ID', this.#o.callId],
      ['CSeq', `${this.#cseq} CANCEL`],
    ]);
    const cancel = this.#cancel;
    let interval = T1_MS;
    let elapsed = 0;
    const again = () => {
      if (this.#finalAck?.cseq === this.#cseq || this.#ack || elapsed >= 64 * T1_MS) return;
      if (elapsed === 0 || !this.#o.reliable) this.#o.send(cancel);
      this.#after(interval, again);
      elapsed += interval;
      interval = Math.min(interval * 2, T2_MS);
    };
    again();
  }

  /** The ACK of a non-2xx final response (17.1.1.3): the INVITE's Request-URI, Via and From, the response's To. */
  #nonSuccessAck(response: SipResponse): Buffer {
    return writeSipMessage(`ACK ${this.#o.requestUri} SIP/2.0`, [
      ['Via', `SIP/2.0/${this.#o.reliable ? 'TCP' : 'UDP'} ${this.#o.sentBy};branch=${this.#branch};rport`],
      ['Max-Forwards', '70'],
      ['From', this.#o.from],
      ['To', response.headers.one('to') ?? this.#o.to],
      ['Call-ID', this.#o.callId],
      ['CSeq', `${this.#cseq} ACK`],
    ]);
  }

  #finish(outcome: InviteOutcome): void {
    this.#stopRetransmit();
    if (this.#settled) return;
    this.#settled = true;
    this.#settle(outcome);
  }

  #after(ms: number, run: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed) run();
    }, ms);
    timer.unref();
    this.#timers.add(timer);
    return timer;
  }
}

/** A branch of our own (RFC 3261 8.1.1.7: the magic cookie, then unique). */
function newBranch(): string {
  return `z9hG4bK${randomBytes(10).toString('hex')}`;
}
