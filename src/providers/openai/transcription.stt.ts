import type { SttCapabilities, SttOpenOptions, SttProvider, SttResult, SttStream } from '../stt.ts';
import { ProviderError } from '../errors.ts';
import { encodeWav } from '../../lib/wav.ts';
import { post, readBounded, type OpenAiEndpoint } from './http.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { OPENAI_AUDIO_LANGUAGES } from './languages.ts';
import { primaryLanguage } from '../../lib/language-tags.ts';

export interface OpenAiTranscriptionOptions extends OpenAiEndpoint {
  /** e.g. 'whisper-1', 'gpt-4o-mini-transcribe'. */
  model: string;
  /** ISO-639-1 hint, e.g. 'en', for streams opened without a language; optional. */
  language?: string;
  /** Longest utterance kept, ms; later audio of the utterance is dropped. Default 60 000. */
  maxUtteranceMs?: number;
}

/** Largest transcription answer read, bytes (a minute of speech is about 1 KB of text). */
const MAX_ANSWER_BYTES = 1_048_576;

/** Longest `prompt` sent, characters (the models read about 224 tokens of it). */
const PROMPT_MAX_CHARS = 600;

/** The phrases as a transcription prompt: de-duplicated, comma-separated, cut at PROMPT_MAX_CHARS. */
function promptOf(phrases: readonly string[]): string {
  let out = '';
  for (const p of new Set(phrases)) {
    const next = out ? `${out}, ${p}` : p;
    if (next.length > PROMPT_MAX_CHARS) break;
    out = next;
  }
  return out;
}

/**
 * Batch: the utterance is uploaded once it has ended, so no interim hypotheses; expected phrases
 * go in each request's prompt, so bias() applies from the next utterance.
 */
export const OPENAI_TRANSCRIPTION_CAPABILITIES: SttCapabilities = {
  streaming: false,
  interimResults: false,
  biasing: 'runtime',
  languages: OPENAI_AUDIO_LANGUAGES,
  // The WAV says its rate (8 kHz on a telephone-band call); the server resamples for its model.
  inputSampleRates: 'any',
  telephoneBand: 'good',
  telephoneBandAdvice: 'hosted model trained on varied audio: recommended for telephone-band callers',
};

/**
 * OpenAI-compatible batch transcription (POST /audio/transcriptions, multipart): each utterance's
 * audio is buffered (bounded) and uploaded as a WAV at the stream's rate (16 kHz, or 8 kHz on a
 * telephone-band call: SttOpenOptions.sampleRateHz) when the turn ends. Uploads of
 * successive utterances may overlap; each finalize() gets its own utterance's text. close()
 * aborts the uploads in flight. Expected phrases (bias(), then SttOpenOptions.keywords) go in
 * each request's `prompt`. Batch: no interim hypotheses.
 */
export class OpenAiTranscriptionStt implements SttProvider {
  readonly id = 'openai-transcription';
  readonly capabilities = OPENAI_TRANSCRIPTION_CAPABILITIES;
  readonly #o: OpenAiTranscriptionOptions;

  constructor(options: OpenAiTranscriptionOptions) {
    this.#o = options;
  }

  /** The languages OpenAI documents for transcription (the Whisper list). */
  languages(): readonly string[] {
    return OPENAI_AUDIO_LANGUAGES;
  }

  /**
   * Transcribes one utterance; `language` (BCP-47) is sent as its ISO-639-1 code, default the
   * configured one. `phrases`, words the speaker is expected to use, go in the request's `prompt`
   * (comma-separated, at most PROMPT_MAX_CHARS), which steers the model's spelling and vocabulary.
   * `sampleRateHz`: the audio's rate, which the WAV states (default 16 kHz).
   */
  async transcribe(pcm: Int16Array, signal?: AbortSignal, language = this.#o.language, phrases: readonly string[] = [], sampleRateHz = 16_000): Promise<SttResult> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(encodeWav({ sampleRate: sampleRateHz, channels: 1, samples: pcm }))], { type: 'audio/wav' }), 'utterance.wav');
    form.append('model', this.#o.model);
    form.append('response_format', 'json');
    // The endpoint takes ISO-639-1 ('pt'), not a regional tag ('pt-BR').
    if (language) form.append('language', primaryLanguage(language));
    const prompt = promptOf(phrases);
    if (prompt) form.append('prompt', prompt);
    const res = await post('asr', this.id, this.#o, '/audio/transcriptions', form, {}, signal);
    // The answer is a peer's: read within a size bound, parsed within the depth bound.
    const body = await readBounded(res, MAX_ANSWER_BYTES, signal, false, 'asr', this.id).catch((error: unknown) => {
      signal?.throwIfAborted(); // an abort while the body was read is not a malformed answer
      throw error instanceof ProviderError ? error : new ProviderError('asr', this.id, 'reading the answer failed', { retryable: true, cause: error });
    });
    const parsed = parseBoundedJson(body.toString('utf8'));
    const json = parsed.ok && typeof parsed.value === 'object' && parsed.value !== null ? (parsed.value as { text?: unknown }) : undefined;
    if (!json || typeof json.text !== 'string') throw new ProviderError('asr', this.id, 'response has no text');
    return { text: json.text.trim() };
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    options.signal?.throwIfAborted();
    const rateHz = options.sampleRateHz ?? 16_000;
    const max = ((this.#o.maxUtteranceMs ?? 60_000) * rateHz) / 1000;
    let parts: Int16Array[] = [];
    let samples = 0;
    let closed = false;
    const keywords = options.keywords ?? [];
    let biased: readonly string[] = [];
    // close() aborts the uploads in flight with this reason: their finalizes reject with it.
    const closing = new AbortController();
    return {
      write: (pcm) => {
        if (closed || samples >= max) return;
        const take = pcm.subarray(0, Math.max(0, max - samples));
        parts.push(take.slice());
        samples += take.length;
      },
      finalize: async (signal) => {
        if (closed) throw new ProviderError('asr', this.id, 'stream closed');
        signal?.throwIfAborted();
        const all = new Int16Array(samples);
        let o = 0;
        for (const p of parts) {
          all.set(p, o);
          o += p.length;
        }
        parts = [];
        samples = 0;
        if (all.length === 0) return { text: '' };
        return this.transcribe(all, signal ? AbortSignal.any([signal, closing.signal]) : closing.signal, options.language ?? this.#o.language, [...biased, ...keywords], rateHz);
      },
      bias: (phrases) => {
        biased = [...phrases];
      },
      close: async () => {
        if (closed) return;
        closed = true;
        parts = [];
        closing.abort(new ProviderError('asr', this.id, 'stream closed'));
      },
    };
  }
}
