/**
 * One carrier media stream (Twilio's, in its dialect) as a call endpoint: the caller's μ-law
 * 8 kHz audio decoded and resampled to the port's 16 kHz, keypad digits to the sink, our audio
 * resampled and encoded back, a mark after each frame so the played position comes from the
 * carrier (what it echoes has been played), `clear` on barge-in, and bounds on what the peer may
 * send. The session sees only the port.
 */
import type { RawData, WebSocket } from 'ws';
import type { CallMedia } from '../../domain/call.ts';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { createResampler, type Resampler } from '../../providers/audio/resample.ts';
import { decodeMulaw, encodeMulaw } from '../codec/mulaw.ts';
import { ENDPOINT_SAMPLE_RATE, type CallEndpoint, type CallEnding, type CallEvent, type EndpointSink } from '../endpoint.ts';
import { MAX_STREAM_MESSAGE_CHARS, STREAM_SAMPLE_RATE, type StreamDialect, type StreamMessage } from './stream-protocol.ts';

/** What the stream's start said: the carrier's ids and our own parameters. */
export type StreamStart = Extract<StreamMessage, { kind: 'start' }>;

/** Audio the peer may send ahead of real time before the excess is dropped, ms. */
const AUDIO_BURST_MS = 2_000;
/** Audio dropped for running ahead of real time, in total, before the peer is cut off as a flood, ms. */
const FLOOD_DROPPED_MS = 5_000;
/** Messages per second the peer may send on average (Twilio sends 50 media messages a second, plus marks). */
const MESSAGES_PER_SECOND = 200;
/** Messages the peer may send in a burst above that rate. */
const MESSAGE_BURST = 400;
/** Our audio the socket may hold unsent before the peer counts as not reading, bytes (~60 s of 20 ms messages). */
const SOCKET_HARD_LIMIT_BYTES = 1_048_576;

export interface MediaStreamOptions {
  /** Monotonic ms for the inbound limits; default performance.now. */
  now?: () => number;
}

export class MediaStreamEndpoint implements CallEndpoint {
  readonly transport: string;
  /** Resolves with the stream's start, or null if the socket closed or sent garbage first. */
  readonly started: Promise<StreamStart | null>;
  /**
   * Hands the call to a number or SIP URI (the port's `transfer`): set by the transport once it
   * knows the carrier's call (its REST API redirects the call out of the stream); absent until then.
   */
  transfer?: (destination: string) => Promise<void>;
  readonly #ws: WebSocket;
  readonly #dialect: StreamDialect;
  readonly #now: () => number;
  #sink: EndpointSink | undefined;
  #start: StreamStart | undefined;
  #resolveStart!: (start: StreamStart | null) => void;
  #toPort: Resampler | undefined;
  #toWire: Resampler | undefined;
  #over = false;
  /** The reply being played: its number (in the marks' names) and how much of it was sent and played, ms. */
  #reply = 0;
  #sentMs = 0;
  #playedMs = 0;
  /** The current reply was cleared: marks echoed after the clear are not played audio. */
  #cleared = false;
  readonly #traffic = { bytesIn: 0, packetsIn: 0, bytesOut: 0, packetsOut: 0, lost: 0 };
  /** The last chunk number and carrier timestamp seen, for loss and jitter (RFC 3550's estimator). */
  #lastChunk: number | undefined;
  #lastTransit: number | undefined;
  #jitterMs = 0;
  /** Inbound bounds: when audio began, how much came, how much was dropped; the message bucket. */
  #audioSince: number | undefined;
  #audioMs = 0;
  #droppedMs = 0;
  #tokens = MESSAGE_BURST;
  #tokensAt: number;

  constructor(ws: WebSocket, dialect: StreamDialect, options: MediaStreamOptions = {}) {
    this.#ws = ws;
    this.#dialect = dialect;
    this.transport = dialect.transport;
    this.#now = options.now ?? (() => performance.now());
    this.#tokensAt = this.#now();
    this.started = new Promise((resolve) => (this.#resolveStart = resolve));
    ws.on('error', () => {}); // 'close' follows
    ws.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    ws.on('close', () => {
      const wasOver = this.#over;
      this.#stop();
      this.#resolveStart(null);
      // The carrier closed without `stop`: the connection was lost, not a hang-up.
      if (!wasOver) this.#sink?.lost();
    });
  }

  /** The stream's carrier ids and parameters, once it has started. */
  get start(): StreamStart | undefined {
    return this.#start;
  }

  /** Loads the resamplers (8 kHz <-> 16 kHz); the transport awaits it before the call runs. */
  async prepare(): Promise<void> {
    this.#toPort ??= await createResampler(STREAM_SAMPLE_RATE, ENDPOINT_SAMPLE_RATE);
    this.#toWire ??= await createResampler(ENDPOINT_SAMPLE_RATE, STREAM_SAMPLE_RATE);
  }

  /** Refuses the stream before any call runs on it (closes the socket; the carrier hangs up). */
  refuse(code: number, reason: string): void {
    this.#stop();
    if (this.#ws.readyState === this.#ws.OPEN) this.#ws.close(code, reason.slice(0, 120));
  }

  // --- the port ----------------------------------------------------------------------------------

  attach(sink: EndpointSink): void {
    this.#sink = sink;
    if (this.#over) sink.lost();
  }

  send(event: CallEvent): void {
    // A phone has no screen: only the reply boundaries matter here, for the played position.
    if (event.type === 'agent_talking') {
      this.#reply += 1;
      this.#sentMs = 0;
      this.#playedMs = 0;
      this.#cleared = false;
    }
  }

  playAudio(pcm: Int16Array): void {
    if (this.#over || !this.#start || !this.#toWire) return;
    if (this.#ws.bufferedAmount > SOCKET_HARD_LIMIT_BYTES) {
      // The carrier is not reading what we send: the call cannot go on.
      this.#ws.terminate();
      return;
    }
    const audio = encodeMulaw(this.#toWire.process(pcm));
    if (audio.length === 0) return;
    this.#sentMs += (pcm.length * 1000) / ENDPOINT_SAMPLE_RATE;
    this.#traffic.packetsOut += 1;
    this.#traffic.bytesOut += audio.length;
    this.#ws.send(this.#dialect.media(this.#start.streamId, audio));
    // Echoed once this frame has played: `<reply>:<ms of the reply played by then>`.
    this.#ws.send(this.#dialect.mark(this.#start.streamId, `${this.#reply}:${Math.round(this.#sentMs)}`));
  }

  clear(): void {
    if (this.#over || !this.#start) return;
    this.#cleared = true;
    this.#ws.send(this.#dialect.clear(this.#start.streamId));
  }

  playedMs(): number {
    return this.#playedMs;
  }

  mediaStats(): CallMedia {
    const t = this.#traffic;
    return {
      transport: this.transport,
      codec: 'pcmu',
      sample_rate: STREAM_SAMPLE_RATE,
      bytes_in: t.bytesIn,
      bytes_out: t.bytesOut,
      packets_in: t.packetsIn,
      packets_out: t.packetsOut,
      packets_lost: t.lost,
      jitter_ms: this.#lastTransit === undefined ? null : Math.round(this.#jitterMs * 100) / 100,
    };
  }

  end(_ending: CallEnding): void {
    // Closing the stream ends <Connect><Stream>: with no TwiML after it, the carrier hangs up.
    const wasOver = this.#over;
    this.#stop();
    if (!wasOver && this.#ws.readyState === this.#ws.OPEN) this.#ws.close(1000, 'call ended');
  }

  // --- the carrier's side ------------------------------------------------------------------------

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#over) return;
    if (!this.#takeMessageToken()) {
      this.#flood();
      return;
    }
    const bytes = wsDataToBuffer(data);
    const message = isBinary || bytes.length > MAX_STREAM_MESSAGE_CHARS ? null : this.#dialect.parse(bytes.toString('utf8'));
    if (!message) {
      // Not the carrier's protocol: a stream that cannot be read cannot carry the call.
      if (!this.#start) this.#resolveStart(null);
      this.refuse(1003, 'malformed stream message');
      this.#sink?.lost();
      return;
    }
    switch (message.kind) {
      case 'start':
        if (this.#start) return;
        this.#start = message;
        this.#resolveStart(message);
        return;
      case 'media':
        return this.#onAudio(message);
      case 'dtmf':
        if (this.#start) this.#sink?.dtmf?.(message.digit);
        return;
      case 'mark':
        return this.#onMark(message.name);
      case 'stop':
        this.#stop();
        this.#sink?.hangup();
        if (this.#ws.readyState === this.#ws.OPEN) this.#ws.close(1000, 'stream stopped');
        return;
      default:
        return;
    }
  }

  #onAudio(message: Extract<StreamMessage, { kind: 'media' }>): void {
    if (!this.#start || !this.#toPort) return;
    const { audio } = message;
    this.#traffic.packetsIn += 1;
    this.#traffic.bytesIn += audio.length;
    this.#track(message.chunk, message.timestampMs);
    // Audio ahead of real time (beyond a burst) is dropped; much of it is a flood.
    const now = this.#now();
    this.#audioSince ??= now;
    const ms = (audio.length * 1000) / STREAM_SAMPLE_RATE;
    if (this.#audioMs + ms > now - this.#audioSince + AUDIO_BURST_MS) {
      this.#droppedMs += ms;
      if (this.#droppedMs > FLOOD_DROPPED_MS) this.#flood();
      return;
    }
    this.#audioMs += ms;
    if (!this.#sink) return;
    const pcm = this.#toPort.process(decodeMulaw(audio));
    if (pcm.length > 0) this.#sink.audio(pcm);
  }

  /** Loss from gaps in the chunk numbers; jitter from the carrier's timestamps against arrival. */
  #track(chunk: number | null, timestampMs: number | null): void {
    if (chunk !== null) {
      if (this.#lastChunk !== undefined && chunk > this.#lastChunk + 1) this.#traffic.lost += chunk - this.#lastChunk - 1;
      if (this.#lastChunk === undefined || chunk > this.#lastChunk) this.#lastChunk = chunk;
    }
    if (timestampMs !== null) {
      const transit = this.#now() - timestampMs;
      if (this.#lastTransit !== undefined) this.#jitterMs += (Math.abs(transit - this.#lastTransit) - this.#jitterMs) / 16;
      this.#lastTransit = transit;
    }
  }

  #onMark(name: string): void {
    const match = /^(\d+):(\d+)$/.exec(name);
    if (!match || this.#cleared || Number(match[1]) !== this.#reply) return;
    this.#playedMs = Math.max(this.#playedMs, Number(match[2]));
  }

  #takeMessageToken(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(MESSAGE_BURST, this.#tokens + ((now - this.#tokensAt) * MESSAGES_PER_SECOND) / 1000);
    this.#tokensAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  #flood(): void {
    if (this.#over) return;
    this.#stop();
    this.#ws.close(1008, 'flood');
    this.#sink?.flood();
  }

  #stop(): void {
    if (this.#over) return;
    this.#over = true;
    this.#toPort?.close();
    this.#toWire?.close();
  }
}
