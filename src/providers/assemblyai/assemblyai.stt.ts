import WebSocket from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { ProviderError } from '../errors.ts';
import { openProviderSocket } from '../streaming/socket.ts';
import { MAX_WORDS_PER_UTTERANCE, type SttCapabilities, type SttInterim, type SttOpenOptions, type SttProvider, type SttResult, type SttStream, type SttWord } from '../stt.ts';

/** AssemblyAI's Universal-Streaming (v3) endpoint, the default URL. */
export const ASSEMBLYAI_STREAMING_URL = 'wss://streaming.assemblyai.com/v3/ws';
/** The English model, the default; 'universal-streaming-multilingual' takes the languages below. */
export const ASSEMBLYAI_ENGLISH_MODEL = 'universal-streaming-english';
const MULTILINGUAL_LANGUAGES = ['en', 'es', 'fr', 'de', 'it', 'pt'];

export interface AssemblyAiOptions {
  /** WebSocket URL; default ASSEMBLYAI_STREAMING_URL. */
  url?: string;
  /** Sent as `Authorization` (AssemblyAI takes the bare key). */
  apiKey?: string;
  /** `speech_model`; default universal-streaming-english. */
  model?: string;
  /** How long finalize() waits for the turn's end after ForceEndpoint, ms; default 3 000. */
  finalizeTimeoutMs?: number;
  /**
   * How long finalize() waits for a turn to begin when the server has not yet sent any of the
   * utterance (its words are still on their way), ms; default 400.
   */
  quietWaitMs?: number;
  /** Connection timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** Audio buffered while the socket is not writable before newer audio is dropped, bytes; default 320 000 (10 s). */
  maxBufferedBytes?: number;
}

export function assemblyAiCapabilities(o: Pick<AssemblyAiOptions, 'model'>): SttCapabilities {
  return {
    streaming: true,
    interimResults: true,
    biasing: 'open-only',
    languages: (o.model ?? ASSEMBLYAI_ENGLISH_MODEL) === ASSEMBLYAI_ENGLISH_MODEL ? ['en'] : MULTILINGUAL_LANGUAGES,
    // pcm_s16le at the rate given as `sample_rate`.
    inputSampleRates: 'any',
    telephoneBand: 'good',
    telephoneBandAdvice: 'a hosted model that takes 8 kHz audio as sent: suited to telephone-band callers',
  };
}

/** Keyterms sent at most (AssemblyAI's limit), each at most 50 characters. */
const MAX_KEYTERMS = 100;
/** Longest turn transcript taken, characters. */
const MAX_TURN_CHARS = 10_000;
/** After close, how long the server has to answer Terminate before the socket is dropped, ms. */
const CLOSE_GRACE_MS = 500;

/** Close codes AssemblyAI ends a session with that retrying cannot fix (auth, balance, policy). */
const PERMANENT_CLOSE_CODES = new Set([1008, 4001, 4002, 4003]);

/**
 * AssemblyAI Universal-Streaming: one WebSocket per call, binary pcm_s16le up; `Begin`, then
 * `Turn` messages (the running `transcript` of finalized words, `words` with the ones still being
 * revised, `end_of_turn`) and `Termination` at the end. The pipeline decides where a caller's turn
 * ends: finalize() sends `ForceEndpoint` and the utterance is every turn the server completed since
 * the last finalize, the forced one last.
 */
export class AssemblyAiStt implements SttProvider {
  readonly id = 'assemblyai';
  readonly #o: AssemblyAiOptions;

  constructor(options: AssemblyAiOptions = {}) {
    this.#o = options;
  }

  get capabilities(): SttCapabilities {
    return assemblyAiCapabilities(this.#o);
  }

  languages(): readonly string[] {
    return assemblyAiCapabilities(this.#o).languages;
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    const url = new URL(this.#o.url ?? ASSEMBLYAI_STREAMING_URL);
    url.searchParams.set('sample_rate', String(options.sampleRateHz ?? 16_000));
    url.searchParams.set('encoding', 'pcm_s16le');
    url.searchParams.set('speech_model', this.#o.model ?? ASSEMBLYAI_ENGLISH_MODEL);
    const keyterms = (options.keywords ?? []).filter((k) => k.length <= 50).slice(0, MAX_KEYTERMS);
    if (keyterms.length > 0) url.searchParams.set('keyterms_prompt', JSON.stringify(keyterms));
    const ws = await openProviderSocket({
      kind: 'asr',
      provider: this.id,
      url,
      headers: this.#o.apiKey ? { authorization: this.#o.apiKey } : {},
      connectTimeoutMs: this.#o.connectTimeoutMs ?? 5000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return new AssemblyAiStream(ws, this.#o, options.sampleRateHz ?? 16_000, options.onInterim);
  }
}

interface TurnMessage {
  type?: unknown;
  turn_order?: unknown;
  end_of_turn?: unknown;
  transcript?: unknown;
  words?: unknown;
  error?: unknown;
}

/** One finalize() waiting for the turns of its utterance. */
interface Waiter {
  /** Where the utterance was cut: ms of audio sent when finalize() was called. */
  cutMs: number;
  /** Turns of the utterance the server completed, in order. */
  turns: HeardTurn[];
  /** Where the utterance's audio began on the stream, ms (its words are moved there). */
  baseMs: number;
  /** Given up (aborted): it keeps its place, so its turns are not handed to the next utterance, and is answered with nothing. */
  abandoned: boolean;
  resolve: (r: SttResult) => void;
  reject: (e: unknown) => void;
  cleanup: () => void;
}

/** A turn's text and its words' times (ms from the stream's first sample), undefined when a word had none. */
interface HeardTurn {
  text: string;
  timed: SttWord[] | undefined;
}

/** A Turn message's fields, checked: its order, transcript, words' text, their times, and where its first word starts (ms). */
function readTurn(m: TurnMessage): { order: number; transcript: string; words: string; timed: SttWord[] | undefined; startMs: number } | undefined {
  if (typeof m.turn_order !== 'number') return undefined;
  const words = Array.isArray(m.words) ? (m.words as Array<{ text?: unknown; start?: unknown; end?: unknown } | null>).slice(0, MAX_WORDS_PER_UTTERANCE) : [];
  const first = words[0]?.start;
  return {
    order: m.turn_order,
    transcript: typeof m.transcript === 'string' ? m.transcript.trim().slice(0, MAX_TURN_CHARS) : '',
    words: words.map((w) => (typeof w?.text === 'string' ? w.text : '')).filter(Boolean).join(' ').slice(0, MAX_TURN_CHARS),
    timed: timedWords(words),
    // A turn whose words carry no time is taken to have begun before any cut.
    startMs: typeof first === 'number' ? first : -Infinity,
  };
}

/** Universal-Streaming's words (`start`/`end` in ms from the stream's first sample), each checked; undefined when any has no time. */
function timedWords(words: ReadonlyArray<{ text?: unknown; start?: unknown; end?: unknown } | null>): SttWord[] | undefined {
  const out: SttWord[] = [];
  for (const w of words) {
    const { text, start, end } = w ?? {};
    if (typeof text !== 'string' || typeof start !== 'number' || typeof end !== 'number' || !Number.isFinite(start) || !Number.isFinite(end) || end < start) return undefined;
    if (text.trim()) out.push({ word: text.trim().slice(0, 100), startMs: start, endMs: end });
  }
  return out.length > 0 ? out : undefined;
}

/**
 * One call's session. finalize() sends ForceEndpoint at once, so the server cuts the audio where
 * the caller's turn ended even while the next utterance's audio follows; each finalize() records
 * that cut (ms of audio sent). A completed Turn belongs to the oldest waiting finalize() whose cut
 * comes after the turn's first word (the turn began before that cut), or else to the utterance
 * still being spoken. A finalize() is answered by its turn's end, by a turn beginning after its
 * cut (the server has moved past it with no turn of it in progress), after `quietWaitMs` when no
 * turn was in progress at its cut, or after `finalizeTimeoutMs` with what was heard.
 */
class AssemblyAiStream implements SttStream {
  readonly #ws: WebSocket;
  readonly #o: AssemblyAiOptions;
  readonly #onInterim: ((i: SttInterim) => void) | undefined;
  readonly #rate: number;
  /** Audio sent so far, samples. */
  #sentSamples = 0;
  /** Completed turns of the utterance being spoken (not yet finalized). */
  #turns: HeardTurn[] = [];
  /** Where the utterance being spoken began on the stream, ms (undefined: none begun). */
  #utteranceAtMs: number | undefined;
  /** The turn in progress: its order, where it began, its words so far (and their times). */
  #open: { order: number; startMs: number; words: string; timed: SttWord[] | undefined } | undefined;
  /** Orders of the turns already given out: later messages about them are dropped. */
  #doneThrough = -1;
  readonly #waiters: Waiter[] = [];
  #failure: ProviderError | undefined;
  #closed = false;
  readonly #socketClosed: Promise<void>;

  constructor(ws: WebSocket, o: AssemblyAiOptions, rate: number, onInterim?: (i: SttInterim) => void) {
    this.#ws = ws;
    this.#o = o;
    this.#rate = rate;
    this.#onInterim = onInterim;
    this.#socketClosed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      // The server's messages are a peer's: bounded, and every field checked before use.
      const parsed = parseBoundedJson(wsDataToBuffer(data).toString('utf8'));
      if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return;
      const m = parsed.value as TurnMessage;
      if (m.type === 'Turn') this.#onTurn(m);
      else if (typeof m.error === 'string') this.#fail(new ProviderError('asr', 'assemblyai', `the server reported an error: ${m.error.slice(0, 200)}`));
    });
    ws.on('error', (e) => this.#fail(new ProviderError('asr', 'assemblyai', 'socket error', { retryable: true, cause: e })));
    ws.on('close', (code, reason) => {
      const why = reason.toString('utf8').slice(0, 200);
      this.#fail(new ProviderError('asr', 'assemblyai', `socket closed by the server (${code}${why ? `: ${why}` : ''})`, { retryable: !PERMANENT_CLOSE_CODES.has(code) }));
    });
  }

  get #sentMs(): number {
    return (this.#sentSamples / this.#rate) * 1000;
  }

  #onTurn(m: TurnMessage): void {
    const turn = readTurn(m);
    if (!turn || turn.order <= this.#doneThrough || this.#closed) return;
    // A turn that began after a cut: the server has moved past it, its utterance is complete.
    while (this.#waiters[0] && this.#waiters[0].cutMs <= turn.startMs) this.#answer();
    const owner = this.#waiters.find((w) => w.cutMs > turn.startMs);
    if (m.end_of_turn === true) {
      this.#doneThrough = turn.order;
      if (this.#open?.order === turn.order) this.#open = undefined;
      const heard = { text: turn.transcript, timed: turn.timed };
      if (!owner) {
        if (turn.transcript) this.#turns.push(heard);
        return;
      }
      if (turn.transcript) owner.turns.push(heard);
      // Its turn ended: it and any older finalize (which had no turn) are answered.
      while (this.#waiters.length > 0 && this.#waiters[0] !== owner) this.#answer();
      this.#answer();
      return;
    }
    this.#open = { order: turn.order, startMs: turn.startMs, words: turn.words || turn.transcript, timed: turn.words ? turn.timed : undefined };
    if (owner || this.#waiters.length > 0 || !this.#onInterim) return;
    const text = [...this.#turns.map((t) => t.text), this.#open.words].filter(Boolean).join(' ');
    if (text) this.#onInterim({ text });
  }

  /** Answers the oldest finalize() with the turns of its utterance. */
  #answer(): void {
    const w = this.#waiters.shift();
    if (!w) return;
    w.cleanup();
    if (w.abandoned) return;
    const turns = w.turns.filter((t) => t.text);
    const text = turns.map((t) => t.text).join(' ').trim();
    // Word times only when every turn had them; the pipeline writes only utterances, so they are moved to this one's start.
    const words = turns.length > 0 && turns.every((t) => t.timed) ? turns.flatMap((t) => t.timed!).slice(0, MAX_WORDS_PER_UTTERANCE) : undefined;
    w.resolve(words ? { text, words: words.map((x) => ({ word: x.word, startMs: Math.max(0, x.startMs - w.baseMs), endMs: Math.max(0, x.endMs - w.baseMs) })) } : { text });
  }

  #fail(error: ProviderError): void {
    if (this.#closed) return;
    this.#failure ??= error;
    for (const w of this.#waiters.splice(0)) {
      w.cleanup();
      w.reject(this.#failure);
    }
  }

  write(pcm: Int16Array): void {
    if (this.#closed || this.#ws.readyState !== WebSocket.OPEN) return;
    // Bounded: when the socket is this far behind, drop audio rather than grow memory.
    if (this.#ws.bufferedAmount > (this.#o.maxBufferedBytes ?? 320_000)) return;
    this.#ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
    this.#utteranceAtMs ??= this.#sentMs;
    this.#sentSamples += pcm.length;
  }

  finalize(signal?: AbortSignal): Promise<SttResult> {
    if (this.#closed) return Promise.reject(new ProviderError('asr', 'assemblyai', 'stream closed'));
    if (this.#failure) return Promise.reject(this.#failure);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.#ws.readyState !== WebSocket.OPEN) return Promise.reject(new ProviderError('asr', 'assemblyai', 'socket not open', { retryable: true }));
    // The cut goes to the server now, in the audio's order, before any of the next utterance.
    this.#ws.send(JSON.stringify({ type: 'ForceEndpoint' }));
    const cutMs = this.#sentMs;
    const baseMs = this.#utteranceAtMs ?? cutMs;
    this.#utteranceAtMs = undefined; // the next sample written begins the next utterance
    return new Promise<SttResult>((resolve, reject) => {
      const giveUp = (): void => {
        if (w.abandoned || !this.#waiters.includes(w)) return;
        w.abandoned = true;
        signal?.removeEventListener('abort', giveUp);
        reject(signal?.reason as Error);
      };
      const answerIfQuiet = (): void => {
        // A turn in progress that began before the cut is still being ended: wait for it.
        if (this.#open && this.#open.startMs < cutMs) return;
        while (this.#waiters.includes(w)) this.#answer();
      };
      const quiet = setTimeout(answerIfQuiet, this.#o.quietWaitMs ?? 400);
      // No end of turn in time: the utterance is what was heard of it so far.
      const timer = setTimeout(() => {
        if (this.#open && this.#open.startMs < cutMs) {
          w.turns.push({ text: this.#open.words, timed: this.#open.timed });
          this.#doneThrough = Math.max(this.#doneThrough, this.#open.order);
          this.#open = undefined;
        }
        while (this.#waiters.includes(w)) this.#answer();
      }, this.#o.finalizeTimeoutMs ?? 3000);
      const w: Waiter = {
        cutMs,
        turns: this.#turns.splice(0),
        baseMs,
        abandoned: false,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(quiet);
          clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
        },
      };
      signal?.addEventListener('abort', giveUp, { once: true });
      this.#waiters.push(w);
    });
  }

  /** Idempotent: a pending finalize rejects; Terminate is sent and the socket closed (dropped if the server does not answer). */
  async close(): Promise<void> {
    if (!this.#closed) {
      for (const w of this.#waiters.splice(0)) {
        w.cleanup();
        w.reject(new ProviderError('asr', 'assemblyai', 'stream closed'));
      }
      this.#closed = true;
      // Terminate ends the session (AssemblyAI bills an open session); the server answers
      // Termination and closes the socket.
      if (this.#ws.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify({ type: 'Terminate' }));
      else this.#ws.terminate();
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
