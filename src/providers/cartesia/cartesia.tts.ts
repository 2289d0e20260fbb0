import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { isRetryableStatus, ProviderError } from '../errors.ts';
import type { SpokenWord, TtsCapabilities, TtsOptions, TtsProvider, TtsTextStream, VoiceInfo } from '../tts.ts';
import { WordTimeline } from '../streaming/word-timeline.ts';
import { AudioQueue, pcmFromBase64 } from '../streaming/audio-queue.ts';
import { closedFailure, openProviderSocket } from '../streaming/socket.ts';
import type { HostedVoice } from '../streaming/voice-table.ts';

/** Cartesia's TTS WebSocket, the default URL. */
export const CARTESIA_TTS_URL = 'wss://api.cartesia.ai/tts/websocket';
/** The API version sent as `Cartesia-Version` by default. */
export const CARTESIA_API_VERSION = '2025-04-16';
/** Generations in flight on one socket before another is opened (Cartesia: "dozens" per socket). */
const MAX_CONTEXTS_PER_SOCKET = 32;

export interface CartesiaOptions {
  /** ws:// or wss:// URL of the TTS socket; default CARTESIA_TTS_URL. */
  url?: string;
  /** Sent as `X-API-Key`. */
  apiKey?: string;
  /** Sent as `Cartesia-Version`; default CARTESIA_API_VERSION. */
  apiVersion?: string;
  /** e.g. 'sonic-2' (the default), 'sonic-turbo'. */
  model: string;
  voices: readonly HostedVoice[];
  /** Voice of agents created without a voice_id; one of `voices`. */
  defaultVoiceId: string;
  /** Connection timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** Longest wait for the next audio chunk, ms; default 10 000. */
  idleTimeoutMs?: number;
}

/** English: the generation request names its language, and the speech engine is not told the agent's. */
const CARTESIA_LANGUAGES = ['en'];

export function cartesiaCapabilities(o: Pick<CartesiaOptions, 'voices'>): TtsCapabilities {
  // `pcm_s16le` at `sample_rate` 8000 gives a telephone-band call its rate from the source.
  return { streaming: true, languages: CARTESIA_LANGUAGES, voices: o.voices.map((v) => v.voiceId), outputSampleRates: [8_000] };
}

interface ServerMessage {
  type?: unknown;
  context_id?: unknown;
  data?: unknown;
  done?: unknown;
  status_code?: unknown;
  error?: unknown;
  message?: unknown;
  word_timestamps?: { words?: unknown; start?: unknown; end?: unknown } | null;
}

/** One generation in flight: where its audio goes (and, for streamed text, its words' times). */
interface Context {
  queue: AudioQueue;
  carry: Buffer;
  timeline?: WordTimeline;
}

/**
 * One socket shared by the generations in flight, told apart by `context_id`. It leaves the
 * pool when it closes (the server closes idle sockets), and its generations fail then.
 */
class CartesiaSocket {
  readonly ws: WebSocket;
  readonly contexts = new Map<string, Context>();
  #closed = false;

  constructor(ws: WebSocket, provider: string, onClosed: (socket: CartesiaSocket) => void) {
    this.ws = ws;
    const failAll = (error: ProviderError): void => {
      for (const c of this.contexts.values()) c.queue.fail(error);
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      // The server's messages are a peer's: bounded, and every field checked before use.
      const parsed = parseBoundedJson(wsDataToBuffer(data).toString('utf8'));
      if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return;
      const m = parsed.value as ServerMessage;
      const context = typeof m.context_id === 'string' ? this.contexts.get(m.context_id) : undefined;
      if (m.type === 'error') {
        const status = typeof m.status_code === 'number' ? m.status_code : undefined;
        const why = (typeof m.error === 'string' ? m.error : typeof m.message === 'string' ? m.message : 'error').slice(0, 200);
        const error = new ProviderError('tts', provider, `the server refused the generation: ${why}`, { ...(status ? { status } : {}), retryable: status !== undefined && isRetryableStatus(status) });
        // An error naming no generation is the socket's: every generation on it fails. One naming
        // a generation already given up (cancelled) is dropped.
        if (typeof m.context_id !== 'string') failAll(error);
        else context?.queue.fail(error);
        return;
      }
      if (!context) return;
      if (m.type === 'chunk' && typeof m.data === 'string') {
        const decoded = pcmFromBase64(m.data, context.carry);
        context.carry = decoded.carry;
        context.queue.push(decoded.samples);
      }
      if (m.type === 'timestamps' && context.timeline && m.word_timestamps && typeof m.word_timestamps === 'object') {
        context.timeline.addWords(m.word_timestamps.words, m.word_timestamps.start, m.word_timestamps.end);
      }
      if (m.type === 'done' || m.done === true) context.queue.end();
    });
    const close = (error: ProviderError): void => {
      if (this.#closed) return;
      this.#closed = true;
      onClosed(this);
      failAll(error);
    };
    ws.on('error', (e) => close(new ProviderError('tts', provider, 'socket error', { retryable: true, cause: e })));
    ws.on('close', (code, reason) => close(closedFailure('tts', provider, code, reason)));
  }

  get usable(): boolean {
    return !this.#closed && this.ws.readyState === WebSocket.OPEN && this.contexts.size < MAX_CONTEXTS_PER_SOCKET;
  }

  send(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }
}

/**
 * Cartesia text-to-speech over its WebSocket (`/tts/websocket`): sockets kept open and shared by
 * the calls (the first sentence of a reply does not wait for a handshake), one `context_id` per
 * sentence, the whole sentence sent with `continue: false`; the server answers with `chunk`
 * messages (base64 raw PCM, asked as `pcm_s16le` at 16 kHz), then `done`, or `error`. Stopping
 * early (barge-in) sends `{ context_id, cancel: true }`, which ends that generation only.
 */
export class CartesiaTts implements TtsProvider {
  readonly id = 'cartesia';
  readonly #o: CartesiaOptions;
  readonly #byVoiceId: ReadonlyMap<string, HostedVoice>;
  readonly #sockets = new Set<CartesiaSocket>();
  /** The socket being opened, which concurrent generations wait for rather than open their own. */
  #opening: Promise<CartesiaSocket> | undefined;
  #closed = false;

  constructor(options: CartesiaOptions) {
    this.#o = options;
    this.#byVoiceId = new Map(options.voices.map((v) => [v.voiceId, v]));
  }

  get defaultVoiceId(): string {
    return this.#o.defaultVoiceId;
  }

  get capabilities(): TtsCapabilities {
    return cartesiaCapabilities(this.#o);
  }

  voices(): readonly VoiceInfo[] {
    return this.#o.voices.map((v) => ({
      voice_id: v.voiceId,
      voice_name: v.name,
      provider: 'cartesia',
      gender: v.gender,
      language: 'en-US',
      multilingual: false,
      sample_rate_hz: 16_000,
      description: v.description,
    }));
  }

  languages(): readonly string[] {
    return CARTESIA_LANGUAGES;
  }

  async #socket(signal: AbortSignal | undefined): Promise<CartesiaSocket> {
    for (const s of this.#sockets) if (s.usable) return s;
    this.#opening ??= openProviderSocket({
      kind: 'tts',
      provider: this.id,
      url: new URL(this.#o.url ?? CARTESIA_TTS_URL),
      headers: { 'Cartesia-Version': this.#o.apiVersion ?? CARTESIA_API_VERSION, ...(this.#o.apiKey ? { 'X-API-Key': this.#o.apiKey } : {}) },
      connectTimeoutMs: this.#o.connectTimeoutMs ?? 5000,
    })
      .then((ws) => {
        const socket = new CartesiaSocket(ws, this.id, (s) => this.#sockets.delete(s));
        if (this.#closed) ws.terminate();
        else this.#sockets.add(socket);
        return socket;
      })
      .finally(() => (this.#opening = undefined));
    const opening = this.#opening;
    if (!signal) return opening;
    // A barge-in while the socket opens gives up the wait; the socket still joins the pool.
    signal.throwIfAborted();
    return new Promise<CartesiaSocket>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      opening.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /**
   * A reply streamed into one context (issue 26): each write is a request with `continue: true`
   * on the same `context_id`, `flush: true` to speak what was sent at once, the end an empty
   * transcript with `continue: false`; `add_timestamps` gives the words' times. Stopping early
   * (barge-in) cancels the context.
   */
  openTextStream(options: TtsOptions = {}): TtsTextStream {
    const voice = this.#byVoiceId.get(options.voiceId ?? '') ?? this.#byVoiceId.get(this.#o.defaultVoiceId);
    const queue = new AudioQueue({ kind: 'tts', provider: this.id, idleTimeoutMs: this.#o.idleTimeoutMs ?? 10_000 });
    const timeline = new WordTimeline();
    const contextId = randomUUID();
    let opening: Promise<CartesiaSocket | undefined> = Promise.resolve(undefined);
    if (this.#closed) queue.fail(new ProviderError('tts', this.id, 'closed'));
    else if (!voice) queue.fail(new ProviderError('tts', this.id, 'no voice configured'));
    else {
      opening = this.#socket(options.signal).then(
        (socket) => {
          socket.contexts.set(contextId, { queue, carry: Buffer.alloc(0), timeline });
          return socket;
        },
        (e: unknown) => {
          queue.fail(e as Error);
          return undefined;
        },
      );
    }
    const base = voice && {
      model_id: this.#o.model,
      voice: { mode: 'id', id: voice.providerVoiceId },
      language: 'en',
      context_id: contextId,
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: options.sampleRateHz ?? 16_000 },
      add_timestamps: true,
      ...cartesiaSpeed(this.#o.model, options.speed),
    };
    // Requests keep their order: each is sent once the socket is there.
    let sending = opening;
    const send = (message: Record<string, unknown>): void => {
      sending = sending.then((socket) => {
        socket?.send({ ...base, ...message });
        return socket;
      });
    };
    let written = false;
    let ended = false;
    let complete = false;
    return {
      write: (text) => {
        if (ended || !text) return;
        written = true;
        send({ transcript: text, continue: true });
      },
      flush: () => {
        if (!ended && written) send({ transcript: '', continue: true, flush: true });
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (!written) queue.end();
        else send({ transcript: '', continue: false });
      },
      audio: async function* () {
        try {
          yield* queue.read(options.signal);
          complete = true;
        } finally {
          ended = true;
          // After the requests already on their way, so no continuation follows the cancel.
          void sending.then((socket) => {
            socket?.contexts.delete(contextId);
            // Stopped early (barge-in) or failed: the context is cancelled, the socket kept.
            if (socket && !complete && written) socket.send({ context_id: contextId, cancel: true });
          });
        }
      },
      words: (): readonly SpokenWord[] => timeline.words(),
    };
  }

  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    if (!text.trim()) return;
    if (this.#closed) throw new ProviderError('tts', this.id, 'closed');
    const voice = this.#byVoiceId.get(options.voiceId ?? '') ?? this.#byVoiceId.get(this.#o.defaultVoiceId);
    if (!voice) throw new ProviderError('tts', this.id, 'no voice configured');
    const socket = await this.#socket(options.signal);
    const contextId = randomUUID();
    const queue = new AudioQueue({ kind: 'tts', provider: this.id, idleTimeoutMs: this.#o.idleTimeoutMs ?? 10_000 });
    socket.contexts.set(contextId, { queue, carry: Buffer.alloc(0) });
    let complete = false;
    try {
      socket.send({
        model_id: this.#o.model,
        transcript: text.trim(),
        voice: { mode: 'id', id: voice.providerVoiceId },
        language: 'en',
        context_id: contextId,
        output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: options.sampleRateHz ?? 16_000 },
        ...cartesiaSpeed(this.#o.model, options.speed),
        continue: false,
      });
      yield* queue.read(options.signal);
      complete = true;
    } finally {
      socket.contexts.delete(contextId);
      // Stopped early (barge-in) or failed: the generation is cancelled, the socket kept.
      if (!complete) socket.send({ context_id: contextId, cancel: true });
    }
  }

  /** Closes the sockets; generations in flight fail. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const opening = this.#opening;
    for (const s of this.#sockets) s.ws.terminate();
    this.#sockets.clear();
    if (opening) await opening.then((s) => s.ws.terminate(), () => {});
  }
}

/**
 * The agent's voice_speed (0.5 to 2; 1 sends nothing) as Cartesia's models take it: Sonic 3's
 * `generation_config.speed` is a rate (0.6 to 1.5, clipped there); earlier models take
 * `__experimental_controls.speed` from -1 (slowest) to 1 (fastest), 0 their own rate, so 0.5 is
 * -1 and 2 is 1 (docs/providers.md#speaking-rate).
 */
export function cartesiaSpeed(model: string, speed: number | undefined): Record<string, unknown> {
  if (speed === undefined || speed === 1) return {};
  if (model.startsWith('sonic-3')) return { generation_config: { speed: Math.min(1.5, Math.max(0.6, speed)) } };
  const control = speed > 1 ? Math.min(1, speed - 1) : Math.max(-1, (speed - 1) * 2);
  return { __experimental_controls: { speed: Number(control.toFixed(3)) } };
}
