/**
 * The Node client's WebRTC wire (docs/media-protocol.md, "WebRTC"): a werift peer connection that
 * joins through the signalling routes with the call's access token, sends the caller's audio as
 * Opus RTP and reads the agent's, and carries the protocol's JSON messages on the "events" data
 * channel. It is shaped like the `ws` WebSocket the client already drives (`open`, `message` with
 * a binary flag, `close` with a code, `send`, `close`, `terminate`), so WebCallClient's logic is
 * the same on both transports: audio frames in and out are 16 kHz PCM as on the WebSocket.
 */
import { EventEmitter } from 'node:events';
import { MediaStreamTrack, RTCPeerConnection, RtpHeader, RtpPacket } from 'werift';
import { parseBoundedJson } from '../lib/bounded-json.ts';
import { startRestartedIce } from '../lib/werift-ice-restart.ts';
import { installSrtpKeyObjects } from '../lib/werift-srtp-keys.ts';
import { FRAME_SAMPLES, OpusCodec, TICKS_PER_SAMPLE } from '../providers/audio/opus.ts';
import { opusPayloadTypeOf } from '../protocol/webrtc-sdp.ts';

/** The signalling routes (src/media/webrtc/webrtc.transport.ts). */
const SESSIONS_PATH = '/v2/webrtc/sessions';
const ICE_SERVERS_PATH = '/v2/webrtc/ice-servers';
/** Largest signalling response read, bytes (an answer SDP is a few kB). */
const MAX_SIGNALLING_BYTES = 65_536;
/** STUN/TURN servers taken from the server's list at most (it sends at most 16). */
const MAX_ICE_SERVERS = 16;
/** ICE restarts the client attempts on its own when the connection fails or stays disconnected (the server takes five). */
const AUTO_RESTARTS = 3;
/** How long the connection may stay `disconnected` before the client restarts ICE, ms. */
const DISCONNECTED_RESTART_MS = 1_000;
/** How long a restart may take to connect before the client gives up on the call, ms (the server waits 10 s). */
const RESTART_CONNECT_MS = 8_000;

/** Headers of received RTP kept at most (a minute of 20 ms packets); past that the older half goes. */
const RECEIVED_HEADERS = 3_000;

/** One RTP packet of the agent as it arrived: `atMs` on performance.now()'s clock. */
export interface ReceivedRtp {
  atMs: number;
  sequence: number;
  timestamp: number;
  marker: boolean;
}

export interface RtcSocketOptions {
  /** The server's base URL (http(s)://host:port). */
  baseUrl: string;
  accessToken: string;
  /** The one local IPv4 address to gather candidates on (tests: 127.0.0.1); default every interface. */
  iceAddress?: string;
  /**
   * Rewrites the SDP both ways before it is used (tests that put a UDP relay in the path name the
   * relay's addresses in the candidates): the offer before it is posted, the answer before it is applied.
   */
  rewriteSdp?: (sdp: string, type: 'offer' | 'answer') => string | Promise<string>;
  /**
   * `relay`: reach the server only through the TURN server the signalling hands out (a network
   * that lets no UDP through but to the TURN server, or only TCP to it); default `all`.
   */
  iceTransportPolicy?: 'all' | 'relay';
  /**
   * Send as a sender with Opus DTX does (tests of the server's inbound side): the encoder's DTX
   * on, and its DTX frames (1 or 2 bytes) not sent, so the wire is silent in a pause but for
   * libopus's refresh every 400 ms. Default false: as Chromium sends to this server, every 20 ms.
   */
  dtx?: boolean;
}

/** One STUN/TURN server as `GET /v2/webrtc/ice-servers` gives it. */
interface IceServer {
  urls: string[];
  username?: string;
  credential?: string;
}

/** A refusal of the signalling exchange: the server's error code and message. */
export class RtcSignallingError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(status: number, code: string, message: string) {
    super(`${code}: ${message}`);
    this.name = 'RtcSignallingError';
    this.status = status;
    this.code = code;
  }
}

export class RtcSocket extends EventEmitter {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 3;
  readyState = RtcSocket.CONNECTING;
  /** The session's URL (the answer's Location). */
  sessionUrl: string | undefined;
  readonly #pc: RTCPeerConnection;
  readonly #track = new MediaStreamTrack({ kind: 'audio' });
  readonly #channel;
  /** As a browser sends: in-band FEC on, no DTX (unless `dtx`). */
  readonly #codec: OpusCodec;
  readonly #out = { sequence: 1, timestamp: 0 };
  /** Opus's payload type as the answer gave it (werift offers 96, Chromium 111), set before media flows. */
  #payloadType: number | undefined;
  readonly #options: RtcSocketOptions;
  #ended = false;
  #restarts = 0;
  #restarting: Promise<void> | undefined;
  #stateTimer: NodeJS.Timeout | undefined;
  /** RTP packets and bytes of Opus sent and received (benchmarks read the bitrate). */
  readonly traffic = { packetsOut: 0, bytesOut: 0, packetsIn: 0, bytesIn: 0 };
  /** The agent's last RECEIVED_HEADERS RTP headers as they arrived (tests read the server's timestamps and marker bits from the wire). */
  readonly received: ReceivedRtp[] = [];

  private constructor(options: RtcSocketOptions) {
    super();
    this.#options = options;
    this.#codec = new OpusCodec({ dtx: options.dtx === true });
    installSrtpKeyObjects(); // callers cost less CPU too (a bench runs many in one process)
    this.#pc = new RTCPeerConnection({
      // The server's STUN/TURN servers are set before the offer; none otherwise (werift's default is a public STUN server).
      iceServers: [],
      iceUseIpv6: false,
      bundlePolicy: 'max-bundle',
      ...(options.iceAddress ? { iceInterfaceAddresses: { udp4: options.iceAddress, udp6: undefined }, iceAdditionalHostAddresses: [options.iceAddress] } : {}),
    });
    this.#channel = this.#pc.createDataChannel('events', { negotiated: true, id: 0, ordered: true });
    this.#channel.stateChanged.subscribe((state) => {
      if (state === 'open' && this.readyState === RtcSocket.CONNECTING) {
        this.readyState = RtcSocket.OPEN;
        this.emit('open');
      } else if (state === 'closed') this.#finish(1000);
    });
    this.#channel.onMessage.subscribe((data) => {
      const text = typeof data === 'string' ? data : data.toString('utf8');
      this.emit('message', Buffer.from(text), false);
      // The call is over: close first, as the browser SDK does (the server closes 2 s later otherwise).
      const parsed = parseBoundedJson(text);
      const ended = parsed.ok ? (parsed.value as { type?: unknown; call_status?: unknown } | null) : null;
      if (ended?.type === 'call_ended') this.#finish(ended.call_status === 'error' ? 1011 : 1000);
    });
    this.#pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((rtp) => {
        this.received.push({ atMs: performance.now(), sequence: rtp.header.sequenceNumber, timestamp: rtp.header.timestamp, marker: rtp.header.marker });
        if (this.received.length > RECEIVED_HEADERS) this.received.splice(0, this.received.length - RECEIVED_HEADERS / 2);
        this.traffic.packetsIn += 1;
        this.traffic.bytesIn += rtp.payload.byteLength;
        const pcm = this.#codec.decode(rtp.payload);
        if (pcm) this.emit('message', Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), true); // else not Opus: dropped
      }),
    );
    this.#pc.connectionStateChange.subscribe((state) => {
      clearTimeout(this.#stateTimer);
      // Before the answer there is no session to restart: a failure is the end.
      if (state === 'closed' || (state === 'failed' && !this.sessionUrl)) this.#finish(1006);
      // The path broke (a network change): restart ICE on the same session, a bounded number of times.
      else if (state === 'failed') this.#autoRestart();
      else if (state === 'disconnected' && this.sessionUrl) this.#stateTimer = setTimeout(() => this.#autoRestart(), DISCONNECTED_RESTART_MS);
    });
  }

  /** Offers, posts the offer with the token, applies the answer; `open` follows once the data channel is up. */
  static connect(options: RtcSocketOptions): RtcSocket {
    const socket = new RtcSocket(options);
    socket.#negotiate().catch((error: unknown) => {
      socket.emit('error', error instanceof Error ? error : new Error(String(error)));
      socket.#finish(error instanceof RtcSignallingError ? 4000 + (error.status % 1000) : 1006);
    });
    return socket;
  }

  async #negotiate(): Promise<void> {
    const pc = this.#pc;
    // The STUN/TURN servers for this call (TURN credentials made for it), as the browser SDK takes them.
    const iceServers = await this.#iceServers();
    pc.setConfiguration({ iceServers, iceTransportPolicy: this.#options.iceTransportPolicy ?? 'all' });
    pc.addTransceiver(this.#track, { direction: 'sendrecv' });
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve();
      pc.iceGatheringStateChange.subscribe((s) => s === 'complete' && resolve());
    });
    const url = new URL(SESSIONS_PATH, this.#options.baseUrl);
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.#options.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sdp: await this.#rewrite(pc.localDescription?.sdp ?? '', 'offer') }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json().catch(() => ({}))) as { sdp?: string; code?: string; message?: string };
    if (res.status !== 201 || typeof body.sdp !== 'string') throw new RtcSignallingError(res.status, body.code ?? 'signalling_failed', body.message ?? `HTTP ${res.status}`);
    this.sessionUrl = new URL(res.headers.get('location') ?? '', this.#options.baseUrl).href;
    const payloadType = opusPayloadTypeOf(body.sdp);
    if (payloadType === null) throw new RtcSignallingError(res.status, 'signalling_failed', 'the answer has no Opus payload type');
    this.#payloadType = payloadType;
    await pc.setRemoteDescription({ type: 'answer', sdp: await this.#rewrite(body.sdp, 'answer') });
  }

  /** `GET /v2/webrtc/ice-servers` with the token: the servers, bounded in size and count. */
  async #iceServers(): Promise<IceServer[]> {
    const res = await fetch(new URL(ICE_SERVERS_PATH, this.#options.baseUrl), {
      headers: { authorization: `Bearer ${this.#options.accessToken}` },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const parsed = text.length <= MAX_SIGNALLING_BYTES ? parseBoundedJson(text) : null;
    const body = parsed?.ok ? (parsed.value as { ice_servers?: unknown; code?: string; message?: string } | null) : null;
    if (res.status !== 200 || !Array.isArray(body?.ice_servers)) throw new RtcSignallingError(res.status, body?.code ?? 'signalling_failed', body?.message ?? `HTTP ${res.status}`);
    return (body.ice_servers as unknown[]).slice(0, MAX_ICE_SERVERS).flatMap((entry): IceServer[] => {
      const { urls, username, credential } = (entry ?? {}) as Record<string, unknown>;
      const list = Array.isArray(urls) ? urls.filter((u): u is string => typeof u === 'string') : [];
      if (list.length === 0) return [];
      return [{ urls: list, ...(typeof username === 'string' ? { username } : {}), ...(typeof credential === 'string' ? { credential } : {}) }];
    });
  }

  /**
   * ICE restart (docs/media-protocol.md, "ICE restarts"): a new offer with new ICE credentials and
   * the candidates of the network as it is now, sent on the session's PATCH; the server's answer is
   * applied. The call, its data channel and its media go on once the new path connects. Resolves
   * once connected again; rejects with the server's refusal or after RESTART_CONNECT_MS.
   */
  restartIce(): Promise<void> {
    this.#restarting ??= this.#restart().finally(() => (this.#restarting = undefined));
    return this.#restarting;
  }

  async #restart(): Promise<void> {
    const pc = this.#pc;
    if (!this.sessionUrl || this.#ended) throw new Error('no session to restart');
    await pc.setLocalDescription(await pc.createOffer({ iceRestart: true }));
    await gatheredOrAfter(pc, 2_000);
    const res = await fetch(this.sessionUrl, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${this.#options.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sdp: await this.#rewrite(pc.localDescription?.sdp ?? '', 'offer') }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json().catch(() => ({}))) as { sdp?: string; code?: string; message?: string };
    if (res.status !== 200 || typeof body.sdp !== 'string') throw new RtcSignallingError(res.status, body.code ?? 'signalling_failed', body.message ?? `HTTP ${res.status}`);
    await pc.setRemoteDescription({ type: 'answer', sdp: await this.#rewrite(body.sdp, 'answer') });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      startRestartedIce(pc),
      new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`ICE did not connect within ${RESTART_CONNECT_MS} ms of the restart`)), RESTART_CONNECT_MS))),
    ]).finally(() => clearTimeout(timer));
  }

  /** The connection broke on its own: restart ICE (AUTO_RESTARTS at most), else the call is lost. */
  #autoRestart(): void {
    if (this.#ended || this.#restarting) return;
    if (this.#restarts >= AUTO_RESTARTS) return this.#finish(1006);
    this.#restarts += 1;
    this.restartIce().catch(() => this.#finish(1006));
  }

  async #rewrite(sdp: string, type: 'offer' | 'answer'): Promise<string> {
    return this.#options.rewriteSdp ? this.#options.rewriteSdp(sdp, type) : sdp;
  }

  /** A text message goes on the data channel (the WebSocket's `join` is the signalling's here: not sent); a binary one is 16 kHz PCM, sent as Opus RTP per 20 ms. */
  send(data: string | Buffer, options?: { binary?: boolean }): void {
    if (this.readyState !== RtcSocket.OPEN) return;
    if (!options?.binary && typeof data === 'string') {
      if (data.startsWith('{"type":"join"')) return;
      this.#channel.send(data);
      return;
    }
    const payloadType = this.#payloadType;
    if (payloadType === undefined) return; // open only follows the answer; never before it
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    const pcm = new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + (buf.byteLength & ~1)));
    for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
      const payload = this.#codec.encode(pcm.subarray(at, at + FRAME_SAMPLES));
      const header = new RtpHeader({ payloadType, sequenceNumber: this.#out.sequence, timestamp: this.#out.timestamp, marker: false });
      this.#out.sequence = (this.#out.sequence + 1) % 65_536;
      this.#out.timestamp = (this.#out.timestamp + FRAME_SAMPLES * TICKS_PER_SAMPLE) % 2 ** 32;
      if (this.#options.dtx && payload.byteLength <= 2) continue; // a DTX frame: nothing on the wire
      this.traffic.packetsOut += 1;
      this.traffic.bytesOut += payload.byteLength;
      this.#track.writeRtp(new RtpPacket(header, payload));
    }
  }

  /** Ends on purpose: `hangup` on the data channel, then the connection closes once the server ends the call. */
  close(_code?: number): void {
    if (this.readyState === RtcSocket.OPEN) this.#channel.send(JSON.stringify({ type: 'hangup' }));
    else this.terminate();
  }

  /** Vanishes: the peer connection closes without a word (the server sees the caller lost). */
  terminate(): void {
    this.#finish(1006);
  }

  #finish(code: number): void {
    if (this.#ended) return;
    this.#ended = true;
    this.readyState = RtcSocket.CLOSED;
    clearTimeout(this.#stateTimer);
    void this.#pc.close().catch(() => {});
    this.#codec.close();
    this.emit('close', code);
  }
}

/** Resolves once the connection's own candidates are gathered, or after `ms`. */
async function gatheredOrAfter(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === 'complete') return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    pc.iceGatheringStateChange.subscribe((state) => {
      if (state !== 'complete') return;
      clearTimeout(timer);
      resolve();
    });
  });
}
