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
import { FRAME_SAMPLES, OpusCodec, TICKS_PER_SAMPLE } from '../providers/audio/opus.ts';

/** The signalling routes (src/media/webrtc/webrtc.transport.ts). */
const SESSIONS_PATH = '/v2/webrtc/sessions';

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
  /** As a browser sends: in-band FEC on, no DTX. */
  readonly #codec = new OpusCodec({ dtx: false });
  readonly #out = { sequence: 1, timestamp: 0 };
  readonly #options: RtcSocketOptions;
  #ended = false;
  /** RTP packets and bytes of Opus sent and received (benchmarks read the bitrate). */
  readonly traffic = { packetsOut: 0, bytesOut: 0, packetsIn: 0, bytesIn: 0 };

  private constructor(options: RtcSocketOptions) {
    super();
    this.#options = options;
    this.#pc = new RTCPeerConnection({
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
        this.traffic.packetsIn += 1;
        this.traffic.bytesIn += rtp.payload.byteLength;
        const pcm = this.#codec.decode(rtp.payload);
        if (pcm) this.emit('message', Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), true); // else not Opus: dropped
      }),
    );
    this.#pc.connectionStateChange.subscribe((state) => {
      if (state === 'failed' || state === 'closed') this.#finish(1006);
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
    await pc.setRemoteDescription({ type: 'answer', sdp: await this.#rewrite(body.sdp, 'answer') });
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
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    const pcm = new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + (buf.byteLength & ~1)));
    for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
      const payload = this.#codec.encode(pcm.subarray(at, at + FRAME_SAMPLES));
      const header = new RtpHeader({ payloadType: 111, sequenceNumber: this.#out.sequence, timestamp: this.#out.timestamp, marker: false });
      this.#out.sequence = (this.#out.sequence + 1) % 65_536;
      this.#out.timestamp = (this.#out.timestamp + FRAME_SAMPLES * TICKS_PER_SAMPLE) % 2 ** 32;
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
    void this.#pc.close().catch(() => {});
    this.#codec.close();
    this.emit('close', code);
  }
}
