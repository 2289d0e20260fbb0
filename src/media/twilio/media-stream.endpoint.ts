/**
 * One carrier media stream (Twilio's, in its dialect) as a call endpoint: the caller's μ-law
 * 8 kHz audio decoded and handed on at 8 kHz (the port's rate here: the call runs at the telephone
 * band end to end), keypad digits to the sink, our 8 kHz audio encoded back, a mark after each frame so the played position comes from the
 * carrier (what it echoes has been played), `clear` on barge-in, keys the agent presses as in-band
 * tones (the stream takes only audio from us), and bounds on what the peer may send. The session
 * sees only the port.
 */
import type { RawData, WebSocket } from 'ws';
import type { CallMedia } from '../../domain/call.ts';
import { concatPcm } from '../../lib/pcm.ts';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { keypadTones, notAKey } from '../codec/keypad.ts';
import { decodeMulaw, encodeMulaw } from '../codec/mulaw.ts';
import { type CallEndpoint, type CallEnding, type CallEvent, type EndpointSink } from '../endpoint.ts';
import { MAX_STREAM_MESSAGE_CHARS, STREAM_SAMPLE_RATE, type StreamDialect, type StreamMessage } from './stream-protocol.ts';

/** What the stream's start said: the carrier's ids and our own parameters. */
export type StreamStart = Extract<StreamMessage, { kind: 'start' }>;

/** Audio the peer may send ahead of real time before the excess is dropped, ms. */
const AUDIO_BURST_MS = 2_000;
/** Audio dropped for running ahead of real time, in total, before the peer is cut off as a flood, ms. */
const FLOOD_DROPPED_MS = 5_000;
/**
 * The caller's audio kept from the stream's start until its call runs (the ticket checked, the
 * call admitted), the latest of it, ms: what the callee says on picking up is heard, not dropped.
 * 1 s: what the pipeline's input queue takes at once.
 */
const HELD_AUDIO_MS = 1_000;
/** Messages per second the peer may send on average (Twilio sends 50 media messages a second, plus marks). */
const MESSAGES_PER_SECOND = 200;
/** Messages the peer may send in a burst above that rate. */
const MESSAGE_BURST = 400;
/** Our audio the socket may hold unsent before the peer counts as not reading, bytes (~60 s of 20 ms messages). */
const SOCKET_HARD_LIMIT_BYTES = 1_048_576;
/** Bytes of μ-law in one media message we send: 20 ms, as Twilio sends its own. */
const WIRE_CHUNK_BYTES = 160;
/** How long past the tones' own length the carrier may take to say it played them, ms. */
const KEYS_PLAYED_SLACK_MS = 10_000;
/** The longest the stream stays open after the call ended for the carrier to play the agent's last words, ms. */
const LAST_WORDS_MAX_MS = 2_000;
/** How long past the unplayed audio's own length the carrier may take to echo its last mark, ms. */
const LAST_MARK_SLACK_MS = 500;
/** Most keys one press may send (a press_digit call's keys are bounded well below this). */
const MAX_KEYS = 64;

export interface MediaStreamOptions {
  /** Monotonic ms for the inbound limits; default performance.now. */
  now?: () => number;
}

export class MediaStreamEndpoint implements CallEndpoint {
  readonly transport: string;
  /** μ-law at 8 kHz, decoded as it is: the call's pipeline runs at the telephone band. */
  readonly sampleRate = STREAM_SAMPLE_RATE;
  /** A phone: the stream closes (the carrier hangs up) once the media stops, not after the analysis. */
  readonly endsWithMedia = true;
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
  /** Audio that came before the call ran (attach), the latest HELD_AUDIO_MS of it. */
  #held: Int16Array[] = [];
  #heldSamples = 0;
  #start: StreamStart | undefined;
  #resolveStart!: (start: StreamStart | null) => void;
  #over = false;
  /** The call ended while the carrier still held unplayed audio: the close waits for its last mark (or the bound). */
  #closing: NodeJS.Timeout | undefined;
  /** The reply being played: its number (in the marks' names) and how much of it was sent and played, ms. */
  #reply = 0;
  #sentMs = 0;
  #playedMs = 0;
  /** The current reply was cleared: marks echoed after the clear are not played audio. */
  #cleared = false;
  /** Key presses sent and waiting for their mark's echo (the carrier played the tones), by mark name. */
  readonly #keyPresses = new Map<string, { played: () => void; failed: (error: Error) => void }>();
  #keyPressCount = 0;
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

  /** Refuses the stream before any call runs on it (closes the socket; the carrier hangs up). */
  refuse(code: number, reason: string): void {
    this.#stop();
    if (this.#ws.readyState === this.#ws.OPEN) this.#ws.close(code, reason.slice(0, 120));
  }

  // --- the port ----------------------------------------------------------------------------------

  attach(sink: EndpointSink): void {
    this.#sink = sink;
    const held = concatPcm(this.#held);
    this.#held = [];
    this.#heldSamples = 0;
    if (this.#over) return sink.lost();
    // What the caller said while the call was being admitted, at once: the call's first audio.
    if (held.length > 0) sink.audio(held);
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
    if (this.#over || !this.#start) return;
    if (this.#ws.bufferedAmount > SOCKET_HARD_LIMIT_BYTES) {
      // The carrier is not reading what we send: the call cannot go on.
      this.#ws.terminate();
      return;
    }
    const audio = encodeMulaw(pcm);
    if (audio.length === 0) return;
    this.#sentMs += (pcm.length * 1000) / STREAM_SAMPLE_RATE;
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
    // The carrier drops what it has not played, keys too (it still echoes their marks).
    this.#failKeyPresses('the keys were cleared before they played');
  }

  playedMs(): number {
    return this.#playedMs;
  }

  /**
   * Presses `digits` as in-band tones (Q.23 pairs, KEY_TONE_MS each with KEY_GAP_MS after, μ-law
   * in 20 ms messages): Twilio's bidirectional stream takes only audio from us, and updating the
   * call with `<Play digits>` would end the stream. The tones queue behind the audio already sent;
   * a mark after them resolves the press once the carrier has played them. Rejects (sending
   * nothing) on a character that is not a key, and when the tones are cleared (barge-in), the
   * stream ends, or the carrier does not echo the mark in time.
   */
  sendDigits(digits: string): Promise<void> {
    const bad = notAKey(digits);
    if (bad !== null) return Promise.reject(new Error(`"${bad}" is not a key`));
    if (digits.length === 0) return Promise.resolve();
    if (digits.length > MAX_KEYS) return Promise.reject(new Error(`at most ${MAX_KEYS} keys at once`));
    if (this.#over || !this.#start) return Promise.reject(new Error('the stream is not open'));
    const audio = encodeMulaw(keypadTones(digits, STREAM_SAMPLE_RATE));
    for (let at = 0; at < audio.length; at += WIRE_CHUNK_BYTES) {
      const chunk = audio.subarray(at, at + WIRE_CHUNK_BYTES);
      this.#traffic.packetsOut += 1;
      this.#traffic.bytesOut += chunk.length;
      this.#ws.send(this.#dialect.media(this.#start.streamId, chunk));
    }
    this.#keyPressCount += 1;
    const name = `keys:${this.#keyPressCount}`;
    this.#ws.send(this.#dialect.mark(this.#start.streamId, name));
    const toneMs = (audio.length * 1000) / STREAM_SAMPLE_RATE;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error('the carrier did not play the keys in time')), toneMs + KEYS_PLAYED_SLACK_MS);
      const settle = (error: Error | null): void => {
        clearTimeout(timer);
        this.#keyPresses.delete(name);
        if (error) reject(error);
        else resolve();
      };
      this.#keyPresses.set(name, { played: () => settle(null), failed: settle });
    });
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
    if (this.#over || this.#closing) return;
    // The agent's last words the carrier has not played yet are heard first: it echoes the last
    // mark once they have been (a close would drop them).
    const unplayedMs = this.#cleared ? 0 : Math.round(this.#sentMs) - this.#playedMs;
    if (unplayedMs > 0 && this.#ws.readyState === this.#ws.OPEN) {
      this.#closing = setTimeout(() => this.#hangUp(), Math.min(LAST_WORDS_MAX_MS, unplayedMs + LAST_MARK_SLACK_MS));
      return;
    }
    this.#hangUp();
  }

  /** Closing the stream ends <Connect><Stream>: with no TwiML after it, the carrier hangs up. */
  #hangUp(): void {
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
    if (!this.#start) return;
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
    const pcm = decodeMulaw(audio);
    if (pcm.length === 0) return;
    if (this.#sink) this.#sink.audio(pcm);
    else this.#hold(pcm);
  }

  /** Keeps audio that came before the call ran, dropping the oldest beyond HELD_AUDIO_MS. */
  #hold(pcm: Int16Array): void {
    this.#held.push(pcm);
    this.#heldSamples += pcm.length;
    const max = (HELD_AUDIO_MS * STREAM_SAMPLE_RATE) / 1000;
    while (this.#heldSamples > max) this.#heldSamples -= this.#held.shift()?.length ?? 0;
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
    const press = this.#keyPresses.get(name);
    if (press) return press.played();
    const match = /^(\d+):(\d+)$/.exec(name);
    if (!match || this.#cleared || Number(match[1]) !== this.#reply) return;
    this.#playedMs = Math.max(this.#playedMs, Number(match[2]));
    if (this.#closing && this.#playedMs >= Math.round(this.#sentMs)) this.#hangUp();
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

  #failKeyPresses(reason: string): void {
    for (const press of [...this.#keyPresses.values()]) press.failed(new Error(reason));
  }

  #stop(): void {
    if (this.#over) return;
    this.#over = true;
    clearTimeout(this.#closing);
    this.#held = [];
    this.#heldSamples = 0;
    this.#failKeyPresses('the stream ended before the keys played');
  }
}
