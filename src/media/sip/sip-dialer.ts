/**
 * The SIP endpoint's dialer (issue 24, docs/telephony.md): create-phone-call's INVITE from a
 * number to its trunk's `termination_uri` (over UDP, or over a TCP connection of the call's own
 * with `;transport=tcp`), through the INVITE client transaction (./invite-client.ts: timers A and
 * B, digest, CANCEL). An answered call becomes a dialog like an inbound one, handed back to the
 * endpoint (./sip.transport.ts), which carries its in-dialog requests (BYE, REFER); an unanswered
 * one ends `dial_busy`, `dial_no_answer` or `dial_failed`. Early media (a 183 with SDP, RFC 3960)
 * opens the call's RTP at the address it names before the answer: its packets are read, held to
 * the call's limits and counted, but decoded for nobody (no recogniser, no recording) and the agent
 * sends nothing; the call is not ongoing until the 2xx, and the 2xx's SDP, where it names other
 * media, is the one followed.
 */
import { randomBytes } from 'node:crypto';
import type dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import type { SipConfig } from '../../config/sip.config.ts';
import type { Call } from '../../domain/call.ts';
import type { PhoneNumber, PhoneNumberReach } from '../../domain/phone-number.ts';
import type { CallEnding } from '../endpoint.ts';
import type { TransportContext } from '../transport.ts';
import { OutboundInvite } from './invite-client.ts';
import { type RtpDropReason, bindRtpSocket } from './rtp.ts';
import { type SipCallEndpoint, openSipEndpoint } from './sip.endpoint.ts';
import { type Dialog, type SipPeer, T1_MS } from './sip-dialog.ts';
import { type SdpAudio, type SipResponse, parseSdpAudio, uriOf } from './sip-message.ts';
import type { SipStreams } from './sip-stream.ts';
import type { RtpMedia } from './rtp-codec.ts';
import { chooseCodec, offerSdp } from './sdp.ts';

/** What the dialer needs of the endpoint it dials for. */
export interface DialerHost {
  /** The endpoint's bound port (our Via and Contact). */
  readonly port: number;
  /** The endpoint is shutting down. */
  readonly closed: boolean;
  readonly streams: SipStreams;
  send(message: Buffer, to: SipPeer): void;
  /** Takes on the dialog of an answered call (its in-dialog requests, its end). */
  addDialog(dialog: Dialog): void;
  /** Ends the dialog: a BYE unless the far end's BYE ended it. */
  hangUp(dialog: Dialog, ending: CallEnding): void;
  /** A cold transfer by REFER in the dialog. */
  transfer(dialog: Dialog, destination: string): Promise<void>;
  /** An RTP packet of a call dropped unread (the endpoint's metric). */
  rtpDropped(reason: RtpDropReason): void;
}

/** One call being placed: its INVITE's identity, where it goes, and the RTP socket bound for it. */
interface Leg {
  callId: string;
  localTag: string;
  from: string;
  remote: SipPeer;
  socket: dgram.Socket;
  /** The media opened early (a 183's SDP), what it was opened for, and the dialog once answered (null before: the endpoint's end and transfer wait for it). */
  early: { endpoint: SipCallEndpoint; key: string } | null;
  opening: Promise<void>;
  dialog: Dialog | null;
}

export class SipDialer {
  readonly #context: TransportContext;
  readonly #config: SipConfig;
  readonly #host: DialerHost;
  /** Our INVITEs of calls we place, by Call-ID, while they ring and while their dialog lasts. */
  readonly #outbound = new Map<string, OutboundInvite>();
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(context: TransportContext, config: SipConfig, host: DialerHost) {
    this.#context = context;
    this.#config = config;
    this.#host = host;
  }

  /** A response to one of our INVITEs (or their CANCELs); false when it is not one. */
  onResponse(response: SipResponse): boolean {
    const invite = this.#outbound.get(response.headers.one('call-id') ?? '');
    if (!invite || !/\s(INVITE|CANCEL)$/.test(response.headers.one('cseq') ?? '')) return false;
    invite.onResponse(response);
    return true;
  }

  /** The dialog of a call we placed is over: its INVITE's timers stop. */
  forget(callId: string): void {
    this.#outbound.get(callId)?.close();
    this.#outbound.delete(callId);
  }

  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const invite of this.#outbound.values()) invite.close();
    this.#outbound.clear();
  }

  /**
   * Places `call` from `number` at its trunk (`termination_uri`, over UDP, or over a TCP connection
   * of its own with `;transport=tcp`): an INVITE from the number
   * to `to`, answered with the trunk's digest credentials when it challenges. Returns the SIP
   * Call-ID once the INVITE is sent; the call becomes ongoing when answered, or ends `dial_busy`,
   * `dial_no_answer` or `dial_failed` (./invite-client.ts). Throws when it cannot be sent at all.
   */
  async dial(call: Call, number: PhoneNumber, reach: PhoneNumberReach, to: string): Promise<string> {
    if (reach.kind !== 'sip' || reach.target === null) throw new Error('the number has no termination_uri');
    const target = reach.target;
    const address = (await lookup(target.host)).address;
    const refused = this.#context.phone.numbers.trunkAddressRefusal(address);
    if (refused) throw new Error(`the trunk's address is not an allowed destination: ${refused}`);
    const port = target.port ?? 5060;
    const stream = target.transport === 'tcp' ? await this.#host.streams.connect(address, port) : null;
    const remote: SipPeer = { address, port, stream };
    let socket: dgram.Socket;
    try {
      socket = await bindRtpSocket(this.#config.bindHost, this.#config.rtpPortMin, this.#config.rtpPortMax);
    } catch (error) {
      stream?.close();
      throw error;
    }
    const callId = `${randomBytes(16).toString('hex')}@${this.#config.publicHost}`;
    const localTag = randomBytes(8).toString('hex');
    const hostPort = `${target.host.includes(':') ? `[${target.host}]` : target.host}${target.port === null ? '' : `:${target.port}`}`;
    const uriParams = stream ? ';transport=tcp' : '';
    const requestUri = `sip:${to}@${hostPort}${uriParams}`;
    const from = `<sip:${number.phone_number}@${this.#config.publicHost}>;tag=${localTag}`;
    const leg: Leg = { callId, localTag, from, remote, socket, early: null, opening: Promise.resolve(), dialog: null };
    const invite = new OutboundInvite({
      callId,
      requestUri,
      from,
      to: `<sip:${to}@${hostPort}>`,
      contact: `sip:${number.phone_number}@${this.#config.publicHost}:${this.#host.port}${uriParams}`,
      sentBy: `${this.#config.publicHost}:${this.#host.port}`,
      reliable: stream !== null,
      sdp: offerSdp(this.#config.publicHost, socket.address().port, this.#config.codecs),
      credentials: reach.auth,
      ringTimeoutMs: this.#config.ringTimeoutMs,
      send: (message) => this.#host.send(message, remote),
      lateAnswer: (response, cseq) => this.#host.hangUp(this.#dialogOf(leg, response, cseq), { reason: 'dial_no_answer', status: 'ended' }),
      // One after another: each waits for the one before it to have opened its media.
      earlyMedia: (response) => {
        leg.opening = leg.opening.then(() => this.#openEarly(call, leg, response));
      },
    });
    this.#outbound.set(callId, invite);
    void this.#ring(call, invite, leg).catch((error: unknown) => {
      this.#context.log.error({ err: error, callId: call.call_id }, 'outbound sip call failed');
      leg.early?.endpoint.release();
      stream?.close();
      try {
        socket.close();
      } catch {
        // closed already (the call's RTP session or the unanswered path closed it)
      }
    });
    return callId;
  }

  /** Waits for the callee: answered, the call runs on a SipCallEndpoint; else it ends with the reason. */
  async #ring(call: Call, invite: OutboundInvite, leg: Leg): Promise<void> {
    const outcome = await invite.start();
    await leg.opening;
    if (outcome.kind === 'unanswered') {
      leg.early?.endpoint.release();
      leg.socket.close();
      // Over TCP, late responses come on the connection: it stays until the linger ends.
      // Late responses (a 487 retransmitted, a 2xx after our CANCEL) are still ACKed for 64*T1.
      const linger = setTimeout(() => {
        this.#timers.delete(linger);
        invite.close();
        if (this.#outbound.get(leg.callId) === invite) this.#outbound.delete(leg.callId);
        leg.remote.stream?.close();
      }, 64 * T1_MS);
      linger.unref();
      this.#timers.add(linger);
      await this.#context.phone.calls.endUnanswered(call.account_id, call.call_id, outcome.reason);
      return;
    }
    const dialog = this.#dialogOf(leg, outcome.response, outcome.cseq);
    leg.dialog = dialog;
    const answer = parseSdpAudio(outcome.response.body);
    const media = 'refusal' in answer ? null : chooseCodec(answer, this.#config.codecs);
    if ('refusal' in answer || !media) {
      leg.early?.endpoint.release();
      leg.socket.close();
      this.#host.hangUp(dialog, { reason: 'dial_failed', status: 'ended' });
      await this.#context.phone.calls.endUnanswered(call.account_id, call.call_id, 'dial_failed');
      return;
    }
    // The early media goes on when the answer names the same; else the answer's is opened.
    const key = mediaKey(answer, media);
    let endpoint: SipCallEndpoint;
    if (leg.early?.key === key) {
      endpoint = leg.early.endpoint;
    } else {
      leg.early?.endpoint.release();
      endpoint = await this.#openMedia(leg, answer, media);
    }
    leg.early = null;
    dialog.endpoint = endpoint;
    if (dialog.state === 'ended' || this.#host.closed) {
      endpoint.end({ reason: 'user_hangup', status: 'ended' });
      return;
    }
    try {
      await this.#context.registry.answer(call.call_id, endpoint);
    } catch (error) {
      // Rang out meanwhile, or the server is shutting down: the callee is hung up on.
      this.#context.log.warn({ err: error, callId: call.call_id }, 'answered sip call not started');
      endpoint.end({ reason: 'error_unknown', status: 'error' });
    }
  }

  /** A 183's SDP: the call's RTP opened at the address it names (again when it names other media than before); an SDP we cannot take is ignored. */
  async #openEarly(call: Call, leg: Leg, response: SipResponse): Promise<void> {
    const sdp = parseSdpAudio(response.body);
    const media = 'refusal' in sdp ? null : chooseCodec(sdp, this.#config.codecs);
    if ('refusal' in sdp || !media || leg.dialog !== null || this.#host.closed) return;
    const key = mediaKey(sdp, media);
    if (leg.early?.key === key) return;
    leg.early?.endpoint.release();
    leg.early = null;
    try {
      leg.early = { endpoint: await this.#openMedia(leg, sdp, media), key };
    } catch (error) {
      this.#context.log.warn({ err: error, callId: call.call_id }, 'sip early media not opened');
    }
  }

  /** The call's endpoint on the leg's RTP socket; its end and transfer go to the dialog once there is one. */
  #openMedia(leg: Leg, sdp: SdpAudio, media: RtpMedia): Promise<SipCallEndpoint> {
    return openSipEndpoint({
      socket: leg.socket,
      media,
      remote: { address: sdp.address, port: sdp.port },
      onEnd: (ending) => {
        if (leg.dialog) this.#host.hangUp(leg.dialog, ending);
      },
      transfer: (destination) => (leg.dialog ? this.#host.transfer(leg.dialog, destination) : Promise.reject(new Error('the call is not up'))),
      rtpDropped: (reason) => this.#host.rtpDropped(reason),
    });
  }

  /** The dialog of a call we placed, from its 2xx (12.1.2): the callee's To (with its tag) and Contact. */
  #dialogOf(leg: Leg, response: SipResponse, cseq: number): Dialog {
    const { remote } = leg;
    const dialog: Dialog = {
      callId: leg.callId,
      localTag: leg.localTag,
      remote,
      invite: null,
      local: leg.from,
      peer: response.headers.one('to') ?? '',
      target: uriOf(response.headers.one('contact') ?? '') || `sip:${remote.address}:${remote.port}${remote.stream ? ';transport=tcp' : ''}`,
      lastResponse: null,
      state: 'confirmed',
      endpoint: null,
      retransmit: null,
      cancelled: false,
      cseq,
      transfer: null,
    };
    this.#host.addDialog(dialog);
    return dialog;
  }
}

/** What an SDP's media comes to: where it goes and how it is coded; the same key is the same media. */
function mediaKey(sdp: SdpAudio, media: RtpMedia): string {
  return JSON.stringify([sdp.address, sdp.port, media]);
}
