/**
 * The server's own SIP endpoint (issue 24, docs/telephony.md): UDP and TCP on SIP_PORT (TCP's
 * framing and bounds in ./sip-stream.ts; a message is handled the same whichever way it came, and
 * answered on the connection it came on). An INVITE to a
 * number an account holds is answered by its inbound agent: the call is admitted as a phone call
 * (src/services/call-lifecycle.ts) and runs on a SipCallEndpoint over RTP. Transactions follow
 * RFC 3261 for what an answering user agent needs: 100 Trying, the 2xx retransmitted (timer G,
 * from T1 to T2) until its ACK, ended without one after 64*T1 (timer H), requests answered again
 * from the last response when they are retransmitted, BYE both ways with its own retransmission
 * (timer E; on TCP, which is reliable, requests are sent once and only the 2xx is repeated, as
 * 13.3.1.4 asks on every transport). Every input is bounded: message and body size, INVITEs per source address per
 * minute, dialogs at once, and the optional allow-list of source addresses (SIP_ALLOWED_CIDRS).
 * It is also the dialer of numbers reached over a trunk (./sip-dialer.ts): create-phone-call's
 * INVITE to the number's `termination_uri`, whose answered call becomes a dialog here like an
 * inbound one.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import ipaddr from 'ipaddr.js';
import type { SipConfig } from '../../config/sip.config.ts';
import { AppError } from '../../domain/errors.ts';
import { normalizeE164 } from '../../domain/phone-number.ts';
import { systemClock } from '../../lib/clock.ts';
import { TokenBuckets } from '../../lib/token-bucket.ts';
import type { CallEnding } from '../endpoint.ts';
import type { Transport, TransportContext, TransportHandle } from '../transport.ts';
import { bindRtpSocket } from './rtp.ts';
import { openSipEndpoint } from './sip.endpoint.ts';
import { inboundAdmission } from '../inbound-admission.ts';
import { CallRefused } from '../session-registry.ts';
import { DigestVerifier } from './digest-server.ts';
import { SipDialer } from './sip-dialer.ts';
import { type Dialog, type SipPeer, T1_MS, T2_MS } from './sip-dialog.ts';
import { SipStreams } from './sip-stream.ts';
import { answerSdp, chooseCodec } from './sdp.ts';
import {
  type SipRequest,
  SipParseError,
  parseSdpAudio,
  parseSipMessage,
  responseTo,
  hostPortOf,
  malformedAnswer,
  tagOf,
  uriOf,
  userOf,
  writeSipMessage,
} from './sip-message.ts';

/** Retry-After of a 486 to an account at its concurrency limit, seconds. */
const BUSY_RETRY_AFTER_SECONDS = 30;
/** A call id as register-phone-call gives it, dialled as the Request-URI's user. */
const REGISTERED_CALL_ID = /^call_[A-Za-z0-9]{1,64}$/;
/** Dialogs (calls being set up or running) at once; more INVITEs get 503. */
const MAX_DIALOGS = 1_000;
const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY';
/** How long a transfer waits for the far end's final word on the new call (a NOTIFY with a final sipfrag) after its 202, ms. */
const TRANSFER_NOTIFY_TIMEOUT_MS = 30_000;

/** The started SIP endpoint: its bound address, and close. */
export class SipTransport implements TransportHandle {
  readonly #context: TransportContext;
  readonly #config: SipConfig;
  /** Inbound digest authentication, when configured (SipConfig.inboundAuth). */
  readonly #digest: DigestVerifier | null;
  #socket: dgram.Socket;
  /** SIP over TCP on the same port. */
  readonly #streams: SipStreams;
  readonly #dialogs = new Map<string, Dialog>();
  readonly #invites: TokenBuckets;
  readonly #allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  readonly #dropped;
  /** RTP packets of calls dropped unread, by reason (rtp.ts: another source, or over the call's limits). */
  readonly #rtpDropped;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Places create-phone-call's calls at trunks. */
  readonly #dialer: SipDialer;
  /** Resolves once the socket is bound. */
  readonly ready: Promise<void>;
  #closed = false;

  constructor(context: TransportContext, config: SipConfig) {
    this.#context = context;
    this.#config = config;
    this.#digest = config.inboundAuth ? new DigestVerifier({ credentials: config.inboundAuth, realm: config.publicHost }) : null;
    this.#invites = new TokenBuckets(systemClock);
    this.#allowed = config.allowedCidrs.map((cidr) => ipaddr.parseCIDR(cidr));
    this.#dropped = context.metrics.counter('switchboard_sip_dropped_total', 'SIP messages dropped or refused before a call, by reason.', ['reason']);
    this.#rtpDropped = context.metrics.counter('switchboard_sip_rtp_dropped_total', 'RTP packets of SIP calls dropped unread, by reason (stray_source: not the negotiated address; rate: over the call\'s packet or audio rate).', ['reason']);
    this.#socket = this.#udpSocket();
    this.#streams = new SipStreams({
      limits: config.tcp,
      onMessage: (data, stream) => this.#onMessage(data, { address: stream.address, port: stream.port, stream }),
      drop: (reason) => this.#dropped.inc({ reason }),
    });
    this.ready = this.#bind();
    // The dialer sees the port once bound and whether we are closing, both read when it needs them.
    const port = () => this.port;
    const closed = () => this.#closed;
    this.#dialer = new SipDialer(context, config, {
      get port() {
        return port();
      },
      get closed() {
        return closed();
      },
      streams: this.#streams,
      send: (message, to) => this.#send(message, to),
      addDialog: (dialog) => {
        this.#dialogs.set(dialog.callId, dialog);
        dialog.remote.stream?.hold();
      },
      hangUp: (dialog, ending) => this.#hangUp(dialog, ending),
      transfer: (dialog, destination) => this.#transfer(dialog, destination),
      rtpDropped: (reason) => this.#rtpDropped.inc({ reason }),
    });
    context.phone.calls.useDialer('sip', {
      dial: async (call, number, reach, to) => {
        try {
          return await this.#dialer.dial(call, number, reach, to);
        } catch (error) {
          context.log.warn({ err: error, callId: call.call_id }, 'sip call could not be placed');
          throw error;
        }
      },
    });
  }

  /** The bound port, UDP and TCP (after `ready`). */
  get port(): number {
    return this.#socket.address().port;
  }

  /** Open SIP connections over TCP, accepted and ours. */
  get connectionCount(): number {
    return this.#streams.size;
  }

  /** Dialogs in progress (set up or running). */
  get dialogCount(): number {
    return this.#dialogs.size;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#dialer.close();
    for (const dialog of this.#dialogs.values()) {
      if (dialog.retransmit) clearTimeout(dialog.retransmit);
      dialog.endpoint?.end({ reason: 'server_shutdown', status: 'ended' });
    }
    this.#dialogs.clear();
    await this.#streams.close();
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #udpSocket(): dgram.Socket {
    const socket = dgram.createSocket(this.#config.bindHost.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (data, from) => this.#onMessage(data, { address: from.address, port: from.port, stream: null }));
    socket.on('error', (error) => this.#context.log.warn({ err: error }, 'sip socket error'));
    return socket;
  }

  /** UDP, then TCP on the same port; with SIP_PORT=0 a port whose TCP side is taken is given up for another. */
  async #bind(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      await new Promise<void>((resolve, reject) => {
        this.#socket.once('error', reject);
        this.#socket.bind(this.#config.port, this.#config.bindHost, () => {
          this.#socket.off('error', reject);
          resolve();
        });
      });
      try {
        await this.#streams.listen(this.#socket.address().port, this.#config.bindHost);
        return;
      } catch (error) {
        if (this.#config.port !== 0 || attempt === 10 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
        this.#socket = this.#udpSocket();
      }
    }
  }

  // --- receiving ---------------------------------------------------------------------------

  #onMessage(data: Buffer, from: SipPeer): void {
    if (this.#closed) return;
    // Keep-alives (RFC 5626 4.4.1: CRLF) are not messages.
    if (data.length <= 4 && data.toString('latin1').trim() === '') return;
    let message;
    try {
      message = parseSipMessage(data);
    } catch (error) {
      const status = error instanceof SipParseError ? error.status : 400;
      this.#dropped.inc({ reason: status === 413 ? 'too_large' : 'malformed' });
      const answer = malformedAnswer(data, status);
      if (answer) this.#send(answer, from);
      return;
    }
    try {
      if (message.kind === 'response') {
        if (this.#dialer.onResponse(message)) return;
        this.#onResponse(message.headers.one('call-id') ?? '', message.headers.one('cseq') ?? '', message.status);
        return;
      }
      this.#onRequest(message, from);
    } catch (error) {
      this.#context.log.error({ err: error }, 'sip request failed');
    }
  }

  #onRequest(request: SipRequest, remote: SipPeer): void {
    const callId = request.headers.one('call-id') ?? '';
    const dialog = this.#dialogs.get(callId);
    switch (request.method) {
      case 'INVITE':
        if (dialog) {
          // A retransmitted INVITE gets the last response again; a re-INVITE in the dialog is declined (no changes of media).
          if (tagOf(request.headers.one('to') ?? '') === null) {
            if (dialog.lastResponse) this.#send(dialog.lastResponse, remote);
          } else {
            this.#send(responseTo(request, 488, 'Not Acceptable Here'), remote);
          }
          return;
        }
        void this.#onInvite(request, remote);
        return;
      case 'ACK':
        if (dialog && dialog.state === 'answered') {
          dialog.state = 'confirmed';
          if (dialog.retransmit) clearTimeout(dialog.retransmit);
          dialog.retransmit = null;
        }
        return;
      case 'BYE':
        if (!dialog) return this.#send(responseTo(request, 481, 'Call/Transaction Does Not Exist'), remote);
        this.#send(responseTo(request, 200, 'OK'), remote);
        this.#forget(dialog);
        dialog.endpoint?.remoteHangup();
        return;
      case 'CANCEL':
        if (!dialog) return this.#send(responseTo(request, 481, 'Call/Transaction Does Not Exist'), remote);
        this.#send(responseTo(request, 200, 'OK'), remote);
        if (dialog.state === 'proceeding' && dialog.invite) {
          dialog.cancelled = true;
          dialog.lastResponse = responseTo(dialog.invite, 487, 'Request Terminated', { toTag: dialog.localTag });
          this.#send(dialog.lastResponse, remote);
        }
        return;
      case 'NOTIFY':
        // The progress of our REFER (RFC 3515 2.4.4): a sipfrag of the far end's new call.
        if (!dialog) return this.#send(responseTo(request, 481, 'Call/Transaction Does Not Exist'), remote);
        this.#send(responseTo(request, 200, 'OK'), remote);
        this.#onTransferProgress(dialog, request);
        return;
      case 'OPTIONS':
        this.#send(responseTo(request, 200, 'OK', { headers: [['Allow', ALLOW], ['Accept', 'application/sdp']] }), remote);
        return;
      default:
        this.#send(responseTo(request, 405, 'Method Not Allowed', { headers: [['Allow', ALLOW]] }), remote);
    }
  }

  async #onInvite(invite: SipRequest, remote: SipPeer): Promise<void> {
    const refuse = (status: number, reason: string, why: string, headers: Array<[string, string]> = []) => {
      this.#dropped.inc({ reason: why });
      this.#send(responseTo(invite, status, reason, { toTag: randomTag(), headers }), remote);
    };
    // Flooding sources are not answered at all: an answer would be traffic for them.
    if (!this.#invites.take(remote.address, this.#config.invitesPerMinute).ok) {
      this.#dropped.inc({ reason: 'rate_limited' });
      return;
    }
    if (this.#allowed.length > 0 && !this.#isAllowed(remote.address)) return refuse(403, 'Forbidden', 'source_not_allowed');
    // Opt-in digest on inbound INVITEs (SIP_INBOUND_AUTH_*): challenged, then the answer checked.
    if (this.#digest) {
      const verdict = this.#digest.verify(invite.headers.one('authorization'), 'INVITE');
      if (verdict.kind === 'challenge') return refuse(401, 'Unauthorized', 'auth_challenge', this.#digest.challenge(verdict.stale).map((value) => ['WWW-Authenticate', value]));
      if (verdict.kind === 'wrong') return refuse(403, 'Forbidden', 'auth_failed');
    }
    if (this.#dialogs.size >= MAX_DIALOGS) return refuse(503, 'Service Unavailable', 'busy');
    const callId = invite.headers.one('call-id') ?? '';
    const localTag = randomTag();
    const to = invite.headers.one('to') ?? '';
    const dialog: Dialog = {
      callId,
      localTag,
      remote,
      invite,
      local: tagOf(to) === null ? `${to};tag=${localTag}` : to,
      peer: invite.headers.one('from') ?? '',
      target: uriOf(invite.headers.one('contact') ?? '') || uriOf(invite.headers.one('from') ?? ''),
      lastResponse: null,
      state: 'proceeding',
      endpoint: null,
      retransmit: null,
      cancelled: false,
      cseq: 1,
      transfer: null,
    };
    this.#dialogs.set(callId, dialog);
    remote.stream?.hold();
    dialog.lastResponse = responseTo(invite, 100, 'Trying');
    this.#send(dialog.lastResponse, remote);
    const fail = (status: number, reason: string, why: string, headers: Array<[string, string]> = []) => {
      this.#forget(dialog);
      if (!dialog.cancelled) refuse(status, reason, why, headers);
    };

    // The Request-URI's user: a number we hold, or a call registered by register-phone-call (sip:{call_id}@host).
    const dialled = userOf(invite.uri);
    const dialIn = dialled !== null && REGISTERED_CALL_ID.test(dialled) ? await this.#context.phone.calls.findDialIn(dialled) : undefined;
    const number = dialIn || dialled === null ? undefined : await this.#context.phone.numbers.findForInbound(dialled);
    if (!number && !dialIn) return fail(404, 'Not Found', 'unknown_number');
    if (number && number.inbound_agent_id === null && !number.inbound_webhook_url) return fail(480, 'Temporarily Unavailable', 'no_inbound_agent');
    const contentType = invite.headers.one('content-type')?.toLowerCase() ?? '';
    const offer = contentType.startsWith('application/sdp') ? parseSdpAudio(invite.body) : { refusal: 'no SDP offer' };
    const media = 'refusal' in offer ? null : chooseCodec(offer, this.#config.codecs);
    if ('refusal' in offer || !media) return fail(488, 'Not Acceptable Here', 'no_common_codec');

    let socket: dgram.Socket;
    try {
      socket = await bindRtpSocket(this.#config.bindHost, this.#config.rtpPortMin, this.#config.rtpPortMax);
    } catch {
      return fail(503, 'Service Unavailable', 'no_rtp_port');
    }
    const endpoint = await openSipEndpoint({ socket, media, remote: { address: offer.address, port: offer.port }, onEnd: (ending) => this.#hangUp(dialog, ending), transfer: (destination) => this.#transfer(dialog, destination), rtpDropped: (reason) => this.#rtpDropped.inc({ reason }) });
    dialog.endpoint = endpoint;
    if (dialog.cancelled || this.#closed) {
      endpoint.end({ reason: 'user_hangup', status: 'ended' });
      return;
    }
    const fromUser = userOf(uriOf(invite.headers.one('from') ?? ''));
    try {
      if (dialIn) {
        await this.#context.phone.calls.noteTelephonyIdentifier(dialIn.call_id, callId);
        await this.#context.registry.answer(dialIn.call_id, endpoint);
      } else if (number) {
        const from = (fromUser === null ? null : normalizeE164(fromUser)) ?? (fromUser ?? 'anonymous').slice(0, 64);
        const admission = await inboundAdmission(this.#context.phone, number, { fromNumber: from, telephonyIdentifier: callId });
        // No agent after the inbound webhook either: nobody answers this number.
        if (!admission) throw new Error('no inbound agent');
        await this.#context.registry.admit(admission, endpoint);
      }
    } catch (error) {
      this.#context.log.info({ err: error }, 'sip call not admitted');
      dialog.endpoint = null;
      endpoint.end({ reason: 'error_unknown', status: 'error' });
      if (error instanceof AppError && error.code === 'concurrency_limit_reached') return fail(486, 'Busy Here', 'concurrency_limit', [['Retry-After', String(BUSY_RETRY_AFTER_SECONDS)]]);
      if (error instanceof CallRefused && error.reason === 'recogniser_busy') return fail(486, 'Busy Here', 'recogniser_busy', [['Retry-After', String(BUSY_RETRY_AFTER_SECONDS)]]);
      return fail(480, 'Temporarily Unavailable', 'not_admitted');
    }
    if (dialog.state === 'ended') return;
    dialog.state = 'answered';
    dialog.lastResponse = responseTo(invite, 200, 'OK', {
      toTag: dialog.localTag,
      headers: [
        ['Contact', `<${this.#ourUri(remote)}>`],
        ['Allow', ALLOW],
        ['Content-Type', 'application/sdp'],
      ],
      body: answerSdp(this.#config.publicHost, socket.address().port, media),
    });
    this.#send(dialog.lastResponse, remote);
    this.#retransmitOk(dialog, T1_MS, 0);
  }

  /** Timer G: the 2xx again at T1, 2*T1, ... capped at T2, until the ACK; timer H: give up after 64*T1. */
  #retransmitOk(dialog: Dialog, intervalMs: number, elapsedMs: number): void {
    dialog.retransmit = setTimeout(() => {
      if (dialog.state !== 'answered') return;
      if (elapsedMs + intervalMs >= 64 * T1_MS) {
        dialog.endpoint?.remoteLost();
        return;
      }
      if (dialog.lastResponse) this.#send(dialog.lastResponse, dialog.remote);
      this.#retransmitOk(dialog, Math.min(intervalMs * 2, T2_MS), elapsedMs + intervalMs);
    }, intervalMs);
    dialog.retransmit.unref();
  }

  /** A response to one of our requests (BYE, REFER): a final one ends that request's retransmission and settles its wait. */
  #onResponse(callId: string, cseq: string, status: number): void {
    if (status < 200) return;
    const waiting = this.#awaiting.get(`${callId} ${cseq.trim().replace(/\s+/g, ' ').toUpperCase()}`);
    waiting?.(status);
  }

  /** Our requests waiting for their final response, by `Call-ID CSeq` (`abc 3 REFER`). */
  readonly #awaiting = new Map<string, (status: number) => void>();

  /** A request of ours in the dialog (12.2.1.1): to the far end's Contact, our side's From, its To. */
  #inDialog(dialog: Dialog, method: string, headers: Array<[string, string]> = []): { message: Buffer; cseq: string } {
    dialog.cseq += 1;
    const cseq = `${dialog.cseq} ${method}`;
    const message = writeSipMessage(`${method} ${dialog.target} SIP/2.0`, [
      ['Via', `SIP/2.0/${dialog.remote.stream ? 'TCP' : 'UDP'} ${this.#config.publicHost}:${this.port};branch=z9hG4bK${randomTag()};rport`],
      ['Max-Forwards', '70'],
      ['From', dialog.local],
      ['To', dialog.peer],
      ['Call-ID', dialog.callId],
      ['CSeq', cseq],
      ...headers,
      ['User-Agent', 'switchboard'],
    ]);
    return { message, cseq };
  }

  /**
   * Sends a request of ours reliably: over UDP again at T1, 2*T1, ... up to T2 (timer E), over TCP
   * once; for 64*T1 (timer F) or until a final response. Resolves with the final status, or null
   * when none came.
   */
  #request(dialog: Dialog, request: { message: Buffer; cseq: string }): Promise<number | null> {
    const key = `${dialog.callId} ${request.cseq.toUpperCase()}`;
    return new Promise((resolve) => {
      let interval = T1_MS;
      let elapsed = 0;
      let timer: NodeJS.Timeout | undefined;
      const done = (status: number | null) => {
        if (timer) {
          clearTimeout(timer);
          this.#timers.delete(timer);
        }
        this.#awaiting.delete(key);
        resolve(status);
      };
      this.#awaiting.set(key, done);
      const again = () => {
        if (this.#closed || elapsed >= 64 * T1_MS) return done(null);
        if (elapsed === 0 || !dialog.remote.stream) this.#send(request.message, dialog.remote);
        // Over TCP the wait is timer F alone: one timer for the whole 64*T1.
        const wait = dialog.remote.stream ? 64 * T1_MS : interval;
        timer = setTimeout(() => {
          if (timer) this.#timers.delete(timer);
          again();
        }, wait);
        timer.unref();
        this.#timers.add(timer);
        elapsed += wait;
        interval = Math.min(interval * 2, T2_MS);
      };
      again();
    });
  }

  /**
   * The agent transfers the call (a cold transfer, RFC 3515): a REFER to the caller naming
   * `destination` (a SIP URI, or an E.164 number at the caller's host). Resolves once the far end
   * accepted it (202) and reported the new call answered (a NOTIFY with a 2xx sipfrag), or when it
   * gave no final word within TRANSFER_NOTIFY_TIMEOUT_MS (it took the transfer on); rejects when
   * it refused the REFER or the new call failed. The session then ends the call, with a BYE.
   */
  async #transfer(dialog: Dialog, destination: string): Promise<void> {
    if (dialog.state !== 'confirmed' && dialog.state !== 'answered') throw new Error('the call is not up');
    if (dialog.transfer) throw new Error('a transfer is already in progress');
    const settled = new Promise<{ ok: true } | { ok: false; why: string }>((resolve) => (dialog.transfer = { settle: resolve }));
    const target = /^sips?:/i.test(destination) ? destination : `sip:${destination}@${hostPortOf(uriOf(dialog.peer))?.host ?? dialog.remote.address}`;
    const status = await this.#request(
      dialog,
      this.#inDialog(dialog, 'REFER', [
        ['Contact', `<${this.#ourUri(dialog.remote)}>`],
        ['Refer-To', `<${target}>`],
        ['Referred-By', `<${uriOf(dialog.local)}>`],
        ['Content-Length', '0'],
      ]),
    );
    if (status === null || status >= 300) {
      dialog.transfer = null;
      throw new Error(status === null ? 'the caller did not answer the REFER' : `the caller refused the REFER (${status})`);
    }
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([settled, new Promise<{ ok: true }>((resolve) => (timer = setTimeout(() => resolve({ ok: true }), TRANSFER_NOTIFY_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (!outcome.ok) throw new Error(outcome.why);
  }

  /** A NOTIFY of our REFER's progress: its sipfrag's final status settles the transfer (RFC 3515 2.4.5). */
  #onTransferProgress(dialog: Dialog, notify: SipRequest): void {
    const transfer = dialog.transfer;
    if (!transfer || !/^refer\b/i.test(notify.headers.one('event') ?? '')) return;
    const status = Number(/^SIP\/2\.0\s+(\d{3})/.exec(notify.body.trimStart())?.[1] ?? NaN);
    if (!Number.isFinite(status) || status < 200) return;
    transfer.settle(status < 300 ? { ok: true } : { ok: false, why: `the new call failed (${status})` });
  }

  /** The session ended the call: a BYE to the caller unless the caller's BYE ended it. */
  #hangUp(dialog: Dialog, _ending: CallEnding): void {
    if (dialog.state === 'ended') return;
    const wasConfirmed = dialog.state === 'confirmed' || dialog.state === 'answered';
    this.#forget(dialog);
    if (!wasConfirmed || this.#closed) return;
    void this.#request(dialog, this.#inDialog(dialog, 'BYE'));
  }

  #forget(dialog: Dialog): void {
    if (dialog.invite === null) this.#dialer.forget(dialog.callId);
    // The caller left the call while our REFER was in flight: it took the transfer on (RFC 5589 6.1).
    dialog.transfer?.settle({ ok: true });
    if (dialog.state !== 'ended') dialog.remote.stream?.release();
    dialog.state = 'ended';
    if (dialog.retransmit) clearTimeout(dialog.retransmit);
    dialog.retransmit = null;
    if (this.#dialogs.get(dialog.callId) === dialog) this.#dialogs.delete(dialog.callId);
  }

  #isAllowed(address: string): boolean {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address);
    } catch {
      return false;
    }
    return this.#allowed.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits));
  }

  #send(message: Buffer, to: SipPeer): void {
    if (this.#closed) return;
    if (to.stream) to.stream.write(message);
    else this.#socket.send(message, to.port, to.address);
  }

  /** Our URI for the far end to reach us at (Contact), naming TCP when it reached us over TCP. */
  #ourUri(peer: SipPeer): string {
    return `sip:${this.#config.publicHost}:${this.port}${peer.stream ? ';transport=tcp' : ''}`;
  }
}

function randomTag(): string {
  return randomBytes(8).toString('hex');
}

/** The SIP endpoint: started only when SIP_PORT is set. */
export const sipTransport: Transport<SipTransport | TransportHandle> = {
  id: 'sip',
  start: (context) => (context.phone.sip === null ? { close: async () => {} } : new SipTransport(context, context.phone.sip)),
};
