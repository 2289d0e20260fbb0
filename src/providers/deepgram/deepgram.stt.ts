import WebSocket from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { MAX_WORDS_PER_UTTERANCE, type SttCapabilities, type SttInterim, type SttOpenOptions, type SttProvider, type SttResult, type SttStream, type SttWord } from '../stt.ts';
import { ProviderError } from '../errors.ts';
import { ANY_LANGUAGE } from '../../lib/language-tags.ts';

/** Deepgram's own listen endpoint, the default URL. */
export const DEEPGRAM_LISTEN_URL = 'wss://api.deepgram.com/v1/listen';

/**
 * Streaming with interim results. Keywords are fixed when the stream opens (the live API takes no
 * new ones mid-stream); `language` may be any BCP-47 tag its model takes.
 */
export const DEEPGRAM_CAPABILITIES: SttCapabilities = {
  streaming: true,
  interimResults: true,
  biasing: 'open-only',
  languages: [ANY_LANGUAGE],
  // linear16 at the rate given as `sample_rate`: the stream's (SttOpenOptions.sampleRateHz; 8000 on a telephone-band call).
  inputSampleRates: 'any',
  telephoneBand: 'good',
  telephoneBandAdvice: 'hosted models, some made for phone calls (STT_MODEL, e.g. nova-2-phonecall): recommended for telephone-band callers',
};

export interface DeepgramOptions {
  /** WebSocket URL of the listen endpoint; default DEEPGRAM_LISTEN_URL. */
  url?: string;
  /** Sent as `Authorization: Token <apiKey>`. */
  apiKey?: string;
  /** e.g. 'nova-2'; optional. */
  model?: string;
  language?: string;
  /** How long finalize() waits for the answer to Finalize, ms; default 3 000. */
  finalizeTimeoutMs?: number;
  /** Connection timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** Audio buffered while the socket is not writable before the oldest is dropped, bytes; default 320 000 (10 s). */
  maxBufferedBytes?: number;
}

/** Largest message taken from the server, bytes (a Results message is about 1 KB); larger ones fail the stream. */
const MAX_MESSAGE_BYTES = 1_048_576;
/** Longest segment transcript taken, characters. */
const MAX_SEGMENT_CHARS = 10_000;

/** Keywords sent at most (each is a query parameter of the connection URL). */
const MAX_KEYWORDS = 100;

interface ResultsMessage {
  type?: string;
  is_final?: boolean;
  speech_final?: boolean;
  from_finalize?: boolean;
  channel?: { alternatives?: Array<{ transcript?: string; words?: unknown }> };
}

/** Deepgram's `words` of an alternative (seconds from the stream's first sample), checked field by field, in ms. */
function wordsOf(alternative: { words?: unknown } | undefined): SttWord[] {
  const words = alternative?.words;
  if (!Array.isArray(words)) return [];
  const out: SttWord[] = [];
  for (const w of words.slice(0, MAX_WORDS_PER_UTTERANCE) as Array<Record<string, unknown> | null>) {
    const word = w?.['punctuated_word'] ?? w?.['word'];
    const start = w?.['start'];
    const end = w?.['end'];
    if (typeof word !== 'string' || typeof start !== 'number' || typeof end !== 'number' || !Number.isFinite(start) || !Number.isFinite(end) || end < start) continue;
    out.push({ word: word.slice(0, 100), startMs: start * 1000, endMs: end * 1000 });
  }
  return out;
}

/**
 * Deepgram-style streaming recognition: one WebSocket per call, binary linear16 16 kHz audio up,
 * JSON `Results` down. Every segment, interim or final, gives an interim hypothesis (the final
 * segments so far plus the one being revised) until finalize() is called. Final segments
 * (`is_final`) accumulate into the current utterance;
 * finalize() sends `{"type":"Finalize"}`, and the server answers each Finalize, in order, with a
 * result marked `from_finalize` that ends that utterance. Each finalize() therefore waits in a
 * queue for its own answer: overlapping finalizes each get their own utterance's text.
 */
export class DeepgramStt implements SttProvider {
  readonly id = 'deepgram';
  readonly capabilities = DEEPGRAM_CAPABILITIES;
  readonly #o: DeepgramOptions;

  constructor(options: DeepgramOptions = {}) {
    this.#o = options;
  }

  /**
   * Any BCP-47 tag: Deepgram's `language` parameter takes BCP-47 tags and which ones depends on
   * the model, so the service answers for the tag and Deepgram refuses one its model lacks.
   */
  languages(): readonly string[] {
    return DEEPGRAM_CAPABILITIES.languages;
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    const signal = options.signal;
    signal?.throwIfAborted();
    const url = new URL(this.#o.url ?? DEEPGRAM_LISTEN_URL);
    url.searchParams.set('encoding', 'linear16');
    const rateHz = options.sampleRateHz ?? 16_000;
    url.searchParams.set('sample_rate', String(rateHz));
    url.searchParams.set('channels', '1');
    url.searchParams.set('interim_results', 'true');
    if (this.#o.model) url.searchParams.set('model', this.#o.model);
    const language = options.language ?? this.#o.language;
    if (language) url.searchParams.set('language', language);
    // Keywords are fixed when the stream opens (the live API takes no new ones mid-stream).
    for (const k of (options.keywords ?? []).slice(0, MAX_KEYWORDS)) url.searchParams.append('keywords', k);
    const ws = new WebSocket(url, { headers: this.#o.apiKey ? { authorization: `Token ${this.#o.apiKey}` } : {}, maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error): void => {
        clearTimeout(t);
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = (): void => {
        ws.terminate();
        done(signal?.reason);
      };
      const t = setTimeout(() => {
        ws.terminate();
        done(new ProviderError('asr', this.id, 'connection timed out', { retryable: true }));
      }, this.#o.connectTimeoutMs ?? 5000);
      signal?.addEventListener('abort', onAbort, { once: true });
      ws.once('open', () => done());
      ws.once('error', (e) => done(new ProviderError('asr', this.id, 'connection failed', { retryable: true, cause: e })));
    });
    return new DeepgramStream(ws, this.#o, rateHz, options.onInterim);
  }
}

/** One finalize() waiting for the server's answer to its Finalize. */
interface Waiter {
  resolve: (r: SttResult) => void;
  reject: (e: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
  /**
   * Answered already (by the timeout) or given up (aborted): its Finalize's answer, when it
   * comes, is discarded with the segments before it instead of going to the next utterance.
   */
  settled: boolean;
  cleanup: () => void;
  /** Where its utterance's audio began on the stream, ms from the stream's first sample. */
  baseMs: number;
}

/** After close, how long the server has to answer our close frame before the socket is dropped, ms. */
const CLOSE_GRACE_MS = 500;

class DeepgramStream implements SttStream {
  readonly #ws: WebSocket;
  readonly #o: DeepgramOptions;
  /** Final segments since the last answered Finalize. */
  #finals: string[] = [];
  /** Their words, ms from the stream's first sample (as Deepgram times them). */
  #words: SttWord[] = [];
  /** Samples written on the socket so far, and where the current utterance began (undefined: none begun). */
  #written = 0;
  #utteranceAt: number | undefined;
  /** The audio's rate, Hz (as `sample_rate` told the server). */
  readonly #rateHz: number;
  /** One entry per Finalize sent and not yet answered, in the order sent. */
  readonly #waiters: Waiter[] = [];
  #failure: ProviderError | undefined;
  #closed = false;
  #keepAlive: ReturnType<typeof setInterval>;
  readonly #socketClosed: Promise<void>;

  constructor(ws: WebSocket, o: DeepgramOptions, rateHz: number, onInterim?: (i: SttInterim) => void) {
    this.#ws = ws;
    this.#o = o;
    this.#rateHz = rateHz;
    this.#socketClosed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      // The server's messages are a peer's: bounded, and every field checked before use.
      const parsed = parseBoundedJson(wsDataToBuffer(data).toString('utf8'));
      if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return;
      const m = parsed.value as ResultsMessage;
      if (m.type !== 'Results') return;
      const alternatives = m.channel?.alternatives;
      const said = Array.isArray(alternatives) ? (alternatives[0] as { transcript?: unknown } | undefined)?.transcript : undefined;
      const text = typeof said === 'string' ? said.trim().slice(0, MAX_SEGMENT_CHARS) : '';
      // An utterance's text is bounded however many segments the server sends.
      if (m.is_final && text && this.#finals.reduce((n, f) => n + f.length, 0) < MAX_SEGMENT_CHARS) {
        this.#finals.push(text);
        // Deepgram's times run from the stream's first sample; the pipeline writes only utterances.
        const words = wordsOf(Array.isArray(alternatives) ? alternatives[0] : undefined);
        this.#words.push(...words.slice(0, MAX_WORDS_PER_UTTERANCE - this.#words.length));
      }
      if (m.from_finalize) {
        this.#answer();
      } else if (text && onInterim && this.#waiters.length === 0 && !this.#closed) {
        // The utterance so far: its final segments, then the segment still being revised.
        onInterim({ text: (m.is_final ? this.#finals : [...this.#finals, text]).join(' ') });
      }
    });
    const fail = (why: string) => (e?: unknown) => {
      if (this.#closed) return;
      this.#failure ??= new ProviderError('asr', 'deepgram', why, { retryable: true, cause: e });
      this.#rejectAll(this.#failure);
    };
    ws.on('error', fail('socket error'));
    ws.on('close', fail('socket closed'));
    // Deepgram closes idle sockets after ~10 s without audio; KeepAlive holds the line.
    this.#keepAlive = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'KeepAlive' }));
    }, 5000);
    this.#keepAlive.unref();
  }

  /** The answer to the oldest Finalize: the segments collected so far are that utterance's. */
  #answer(): void {
    const w = this.#waiters.shift();
    const text = this.#finals.join(' ').trim();
    const words = this.#words;
    this.#finals = [];
    this.#words = [];
    if (!w || w.settled) return;
    w.settled = true;
    w.cleanup();
    // The pipeline writes only utterances: Deepgram's times are moved to the start of this one's audio.
    const shifted = words.map((x) => ({ word: x.word, startMs: Math.max(0, x.startMs - w.baseMs), endMs: Math.max(0, x.endMs - w.baseMs) }));
    w.resolve(shifted.length > 0 ? { text, words: shifted } : { text });
  }

  #rejectAll(error: unknown): void {
    for (const w of this.#waiters.splice(0)) {
      if (w.settled) continue;
      w.settled = true;
      w.cleanup();
      w.reject(error);
    }
  }

  write(pcm: Int16Array): void {
    if (this.#closed || this.#ws.readyState !== WebSocket.OPEN) return;
    // Bounded: when the socket is this far behind, drop audio rather than grow memory.
    if (this.#ws.bufferedAmount > (this.#o.maxBufferedBytes ?? 320_000)) return;
    this.#utteranceAt ??= this.#written;
    this.#written += pcm.length;
    this.#ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  finalize(signal?: AbortSignal): Promise<SttResult> {
    if (this.#closed) return Promise.reject(new ProviderError('asr', 'deepgram', 'stream closed'));
    if (this.#failure) return Promise.reject(this.#failure);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#ws.readyState !== WebSocket.OPEN) return Promise.reject(new ProviderError('asr', 'deepgram', 'socket not open', { retryable: true }));
    return new Promise<SttResult>((resolve, reject) => {
      const onAbort = (): void => {
        if (w.settled) return;
        w.settled = true;
        w.cleanup();
        reject(signal?.reason);
      };
      const w: Waiter = {
        resolve,
        reject,
        settled: false,
        baseMs: ((this.#utteranceAt ?? this.#written) * 1000) / this.#rateHz,
        // No answer in time: the utterance is what arrived so far (a server that never marks
        // from_finalize still works, one turn at a time). A late answer is then discarded.
        timer: setTimeout(() => {
          if (w.settled) return;
          w.settled = true;
          w.cleanup();
          const text = this.#finals.join(' ').trim();
          this.#finals = [];
          this.#words = [];
          resolve({ text });
        }, this.#o.finalizeTimeoutMs ?? 3000),
        cleanup: () => {
          clearTimeout(w.timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(w);
      this.#utteranceAt = undefined; // the next sample written begins the next utterance
      this.#ws.send(JSON.stringify({ type: 'Finalize' }));
    });
  }

  /** Idempotent: pending finalizes reject, the socket is closed (dropped if the server does not answer). */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#keepAlive);
      this.#rejectAll(new ProviderError('asr', 'deepgram', 'stream closed'));
      if (this.#ws.readyState === WebSocket.OPEN) {
        this.#ws.send(JSON.stringify({ type: 'CloseStream' }));
        this.#ws.close(1000);
      } else {
        this.#ws.terminate();
      }
    }
    if (this.#ws.readyState === WebSocket.CLOSED) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const dropped = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.#ws.terminate();
        resolve();
      }, CLOSE_GRACE_MS);
    });
    await Promise.race([this.#socketClosed, dropped]);
    clearTimeout(timer);
  }
}
