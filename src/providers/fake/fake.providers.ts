import type { SttCapabilities, SttOpenOptions, SttProvider, SttResult, SttStream } from '../stt.ts';
import type { SpeechStyle, TtsCapabilities, TtsOptions, TtsProvider, VoiceInfo } from '../tts.ts';
import type { ChatDelta, ChatRequest, LlmProvider, ChatToolCall } from '../llm.ts';
import type { VadProvider, VoiceActivityDetector } from '../vad.ts';
import { ProviderError } from '../errors.ts';

/**
 * Scripted, instant providers for tests and the benchmark. They do no real speech work but keep
 * the real contracts (16 kHz PCM, utterance-by-utterance recognition, streamed chat deltas).
 */

/** The languages of the fakes unless told otherwise: the embedded engines', so tests meet the same checks. */
const FAKE_LANGUAGES: readonly string[] = ['en-US'];

/** How a FakeStt is built. */
export interface FakeSttOptions {
  /** openStream() rejects, as an engine that is unavailable does; default false. */
  failOpen?: boolean;
  /** Streams send interim hypotheses (one more scripted word per 200 ms of audio); default false. */
  interims?: boolean;
  /** What the fake says it recognises; default 'en-US', as PocketSphinx. */
  languages?: readonly string[];
}

/**
 * What a FakeStt can do: built with `interims` it streams like a real recogniser, without them it
 * answers like a batch one. It takes no expected phrases and, being scripted, any audio band.
 */
export function fakeSttCapabilities(options: FakeSttOptions = {}): SttCapabilities {
  const interims = options.interims ?? false;
  return {
    streaming: interims,
    interimResults: interims,
    biasing: 'none',
    languages: options.languages ?? FAKE_LANGUAGES,
    // Scripted: it takes the stream's rate as told (SttOpenOptions.sampleRateHz), and tests read what it was told.
    inputSampleRates: 'any',
    telephoneBand: 'good',
    telephoneBandAdvice: 'scripted: the audio band makes no difference',
  };
}

/** A finalize the fake has not answered yet (see FakeStt.hold). */
interface HeldFinalize {
  text: string;
  resolve: (r: SttResult) => void;
  reject: (e: unknown) => void;
  /** Settled already (aborted or its stream closed): skipped by release(). */
  done: boolean;
}

/**
 * Returns the scripted texts in order, one per finalized utterance ('' once the script runs out).
 * An utterance with no audio gives '' without using a scripted text. Answers are instant unless
 * the fake is held: then finalizes stay pending until `release()` answers them in order, and
 * `fail()` makes pending and later finalizes reject, as a recogniser that died would. With
 * `interims`, it streams like a real recogniser: every 200 ms of an utterance's audio reveals one
 * more word of the next scripted text as an interim hypothesis (SttOpenOptions.onInterim).
 */
export class FakeStt implements SttProvider {
  readonly id = 'fake';
  readonly capabilities: SttCapabilities;
  readonly #script: string[];
  /** Utterances finalized so far, with the number of samples each carried. */
  readonly utterances: Array<{ samples: number; text: string }> = [];
  readonly #failOpen: boolean;
  readonly #interims: boolean;
  #held: HeldFinalize[] | undefined;
  #failure: ProviderError | undefined;

  readonly #languages: readonly string[];
  /** The options of each openStream(), in order. */
  readonly opened: SttOpenOptions[] = [];

  /** `languages`: what the fake says it recognises (default 'en-US', as PocketSphinx). `interims`: send interim hypotheses. */
  constructor(script: readonly string[] = [], options: FakeSttOptions = {}) {
    this.capabilities = fakeSttCapabilities(options);
    this.#script = [...script];
    this.#failOpen = options.failOpen ?? false;
    this.#interims = options.interims ?? false;
    this.#languages = options.languages ?? FAKE_LANGUAGES;
  }

  languages(): readonly string[] {
    return this.#languages;
  }

  /** Appends texts to the script (e.g. from a test while a call runs). */
  push(...texts: string[]): void {
    this.#script.push(...texts);
  }

  /** From now on, finalizes stay pending until release() (or fail()). */
  hold(): void {
    this.#held ??= [];
  }

  /** Answers every held finalize, in order, and stops holding. */
  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const h of held) {
      if (h.done) continue;
      h.done = true;
      h.resolve({ text: h.text });
    }
  }

  /** The engine dies: held finalizes and every later one reject with a ProviderError (kind 'asr'). */
  fail(message = 'engine failed'): void {
    this.#failure ??= new ProviderError('asr', 'fake', message);
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const h of held) {
      if (h.done) continue;
      h.done = true;
      h.reject(this.#failure);
    }
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    options.signal?.throwIfAborted();
    this.opened.push(options);
    if (this.#failOpen) throw new ProviderError('asr', 'fake', 'engine unavailable');
    let samples = 0;
    let closed = false;
    const mine = new Set<HeldFinalize>();
    const onInterim = this.#interims ? options.onInterim : undefined;
    let lastInterim = '';
    return {
      write: (pcm: Int16Array) => {
        if (closed) return;
        const before = samples;
        samples += pcm.length;
        const next = this.#script[0];
        // One more word of the interim every 200 ms of audio, at the stream's rate.
        const perWord = (options.sampleRateHz ?? 16_000) / 5;
        const words = Math.floor(samples / perWord);
        if (!onInterim || !next || words === Math.floor(before / perWord)) return;
        const text = next.split(' ').slice(0, words).join(' ');
        if (text === lastInterim) return;
        lastInterim = text;
        onInterim({ text });
      },
      finalize: (signal?: AbortSignal): Promise<SttResult> => {
        if (closed) return Promise.reject(new ProviderError('asr', 'fake', 'stream closed'));
        if (this.#failure) return Promise.reject(this.#failure);
        if (signal?.aborted) return Promise.reject(signal.reason);
        const text = samples === 0 ? '' : (this.#script.shift() ?? '');
        this.utterances.push({ samples, text });
        samples = 0;
        lastInterim = '';
        if (!this.#held) return Promise.resolve({ text });
        return new Promise<SttResult>((resolve, reject) => {
          const h: HeldFinalize = { text, resolve, reject, done: false };
          const settle = (): void => {
            mine.delete(h);
            signal?.removeEventListener('abort', onAbort);
          };
          const onAbort = (): void => {
            if (h.done) return;
            h.done = true;
            settle();
            reject(signal?.reason);
          };
          h.resolve = (r) => {
            settle();
            resolve(r);
          };
          h.reject = (e) => {
            settle();
            reject(e);
          };
          signal?.addEventListener('abort', onAbort, { once: true });
          mine.add(h);
          this.#held?.push(h);
        });
      },
      close: async () => {
        if (closed) return;
        closed = true;
        for (const h of [...mine]) {
          if (h.done) continue;
          h.done = true;
          h.reject(new ProviderError('asr', 'fake', 'stream closed'));
        }
      },
    };
  }
}

/**
 * The fake's voices: the embedded voices' ids, so agents made for the embedded engines run on the
 * fakes unchanged; each is the same 440 Hz tone.
 */
const FAKE_VOICES: readonly VoiceInfo[] = ['flite-kal16', 'flite-slt', 'flite-rms', 'flite-awb', 'flite-kal'].map((voice_id) => ({
  voice_id,
  voice_name: `Tone (${voice_id})`,
  provider: 'fake',
  gender: null,
  language: 'en-US',
  multilingual: false,
  sample_rate_hz: 16_000,
  description: 'A 440 Hz tone standing in for the embedded voice of the same id (tests and benchmarks).',
}));

/** What a FakeTts speaking `languages` can do: its tone is made and handed out piece by piece. */
export function fakeTtsCapabilities(languages: readonly string[] = FAKE_LANGUAGES): TtsCapabilities {
  return { streaming: true, languages, voices: FAKE_VOICES.map((v) => v.voice_id) };
}

/**
 * Instant synthesis: a quiet 440 Hz tone of `msPerChar` per character (default 60 ms, about
 * real speaking rate), in 200 ms chunks. `firstChunkDelayMs` simulates engine latency.
 */
export class FakeTts implements TtsProvider {
  readonly id = 'fake';
  readonly capabilities: TtsCapabilities;
  readonly defaultVoiceId = 'flite-kal16';
  readonly #msPerChar: number;
  readonly #amplitude: number;
  readonly #languages: readonly string[];
  readonly texts: string[] = [];
  /** The voice of each synthesize(), in order (undefined: none given). */
  readonly voiceIds: Array<string | undefined> = [];
  /** The speaking rate and pronunciations of each synthesize(), in order. */
  readonly styles: SpeechStyle[] = [];

  /** `languages`: what the fake says it speaks (default 'en-US', as Flite). */
  constructor(options: { msPerChar?: number; amplitude?: number; languages?: readonly string[] } = {}) {
    this.#msPerChar = options.msPerChar ?? 60;
    this.#amplitude = options.amplitude ?? 3000;
    this.#languages = options.languages ?? FAKE_LANGUAGES;
    this.capabilities = fakeTtsCapabilities(this.#languages);
  }

  voices(): readonly VoiceInfo[] {
    return FAKE_VOICES;
  }

  languages(): readonly string[] {
    return this.#languages;
  }

  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    this.texts.push(text);
    this.voiceIds.push(options.voiceId);
    this.styles.push({ ...(options.speed !== undefined ? { speed: options.speed } : {}), ...(options.pronunciations ? { pronunciations: options.pronunciations } : {}) });
    const total = Math.round((text.length * this.#msPerChar * 16000) / 1000);
    for (let i = 0; i < total; i += 3200) {
      options.signal?.throwIfAborted();
      const n = Math.min(3200, total - i);
      const chunk = new Int16Array(n);
      for (let j = 0; j < n; j++) chunk[j] = Math.round(this.#amplitude * Math.sin((2 * Math.PI * 440 * (i + j)) / 16000));
      yield chunk;
    }
  }
}

/** One scripted LLM answer: text (streamed word by word), tool calls, or a function of the request. */
export type ScriptedAnswer =
  | string
  | { text?: string; toolCalls?: Array<{ name: string; arguments?: Record<string, unknown> }> }
  | ((request: ChatRequest) => string | { text?: string; toolCalls?: Array<{ name: string; arguments?: Record<string, unknown> }> });

/** Answers chat requests from a script, in order; records every request. Throws once exhausted. */
export class FakeLlm implements LlmProvider {
  readonly id = 'fake';
  readonly requests: ChatRequest[] = [];
  readonly #script: ScriptedAnswer[];
  #calls = 0;

  constructor(script: readonly ScriptedAnswer[] = []) {
    this.#script = [...script];
  }

  push(...answers: ScriptedAnswer[]): void {
    this.#script.push(...answers);
  }

  async *chat(request: ChatRequest): AsyncIterable<ChatDelta> {
    this.requests.push(request);
    const next = this.#script.shift();
    if (next === undefined) throw new ProviderError('llm', 'fake', 'script exhausted');
    const answer = typeof next === 'function' ? next(request) : next;
    const a = typeof answer === 'string' ? { text: answer } : answer;
    if (a.text) {
      for (const piece of a.text.match(/\S+\s*/g) ?? []) {
        request.signal?.throwIfAborted();
        yield { type: 'text', text: piece };
      }
    }
    for (const tc of a.toolCalls ?? []) {
      const call: ChatToolCall = { id: `call_${++this.#calls}`, name: tc.name, arguments: JSON.stringify(tc.arguments ?? {}) };
      yield { type: 'tool_call', call };
    }
    yield { type: 'done', finishReason: a.toolCalls?.length ? 'tool_calls' : 'stop' };
  }
}

/** Energy VAD for tests: speech when the frame's RMS exceeds `threshold` (default 500). */
export class EnergyVad implements VadProvider {
  readonly id = 'energy';
  readonly #threshold: number;
  constructor(threshold = 500) {
    this.#threshold = threshold;
  }
  async create(): Promise<VoiceActivityDetector> {
    const threshold = this.#threshold;
    return {
      isSpeech(frame: Int16Array): boolean {
        let sum = 0;
        for (const s of frame) sum += s * s;
        return Math.sqrt(sum / Math.max(1, frame.length)) > threshold;
      },
      close() {},
    };
  }
}
