import type { TtsCapabilities, TtsOptions, TtsProvider, VoiceInfo } from '../tts.ts';
import { OPENAI_AUDIO_LANGUAGES } from './languages.ts';
import { ProviderError } from '../errors.ts';
import { createResampler } from '../audio/resample.ts';
import { type WavLayout, wavLayoutSoFar } from '../../lib/wav.ts';
import { post, type OpenAiEndpoint } from './http.ts';


/** Bytes of a WAV answer read before its data must have begun (its header and chunks before `data`). */
const MAX_WAV_HEADER_BYTES = 65_536;
export interface OpenAiSpeechOptions extends OpenAiEndpoint {
  /** e.g. 'tts-1', 'gpt-4o-mini-tts'. */
  model: string;
  /** Voice of agents created without a voice_id (TTS_VOICE); default 'alloy'. Listed among the voices even when it is not one of OpenAI's (another compatible server's). */
  defaultVoice?: string;
  /** 'pcm' (raw 16-bit LE mono, default) or 'wav'. */
  responseFormat?: 'pcm' | 'wav';
  /** Sample rate of 'pcm' answers; default 24 000 (OpenAI's). */
  pcmSampleRate?: number;
}

/**
 * OpenAI's documented speech voices (API reference of POST /audio/speech). The last four are
 * spoken by gpt-4o-mini-tts only; tts-1 and tts-1-hd refuse them.
 */
const OPENAI_VOICES: ReadonlyArray<{ id: string; newModelsOnly?: boolean }> = [
  { id: 'alloy' }, { id: 'ash' }, { id: 'coral' }, { id: 'echo' }, { id: 'fable' }, { id: 'nova' }, { id: 'onyx' }, { id: 'sage' }, { id: 'shimmer' },
  { id: 'ballad', newModelsOnly: true }, { id: 'verse', newModelsOnly: true }, { id: 'marin', newModelsOnly: true }, { id: 'cedar', newModelsOnly: true },
];

/** OpenAI's documented voices, and the configured default (TTS_VOICE) first when it is none of them. */
function speechVoices(o: OpenAiSpeechOptions): VoiceInfo[] {
  const rate = o.pcmSampleRate ?? 24_000;
  const voice = (id: string, description: string): VoiceInfo => ({
    voice_id: id,
    voice_name: id.charAt(0).toUpperCase() + id.slice(1),
    provider: 'openai',
    gender: null,
    language: 'en-US',
    multilingual: true,
    sample_rate_hz: rate,
    description,
  });
  const documented = OPENAI_VOICES.map((v) =>
    voice(v.id, v.newModelsOnly ? 'OpenAI voice; gpt-4o-mini-tts only (tts-1 refuses it).' : 'OpenAI voice; every speech model.'),
  );
  const own = o.defaultVoice ?? 'alloy';
  return documented.some((v) => v.voice_id === own) ? documented : [voice(own, 'The configured default voice (TTS_VOICE) of this speech endpoint.'), ...documented];
}

/** Streamed: the answer is resampled and handed out while it arrives. */
export function openAiSpeechCapabilities(options: OpenAiSpeechOptions): TtsCapabilities {
  return { streaming: true, languages: OPENAI_AUDIO_LANGUAGES, voices: speechVoices(options).map((v) => v.voice_id) };
}

/**
 * OpenAI-compatible speech (POST /audio/speech). The answer is read as it streams and resampled
 * to 16 kHz chunk by chunk, so the first audio is available before the whole answer arrives.
 */
export class OpenAiSpeechTts implements TtsProvider {
  readonly id = 'openai-speech';
  readonly #o: OpenAiSpeechOptions;

  constructor(options: OpenAiSpeechOptions) {
    this.#o = options;
  }

  get defaultVoiceId(): string {
    return this.#o.defaultVoice ?? 'alloy';
  }

  /** Streamed; the voices of voices(). */
  get capabilities(): TtsCapabilities {
    return openAiSpeechCapabilities(this.#o);
  }

  /** OpenAI's documented voices, and the configured default when it is none of them. */
  voices(): readonly VoiceInfo[] {
    return speechVoices(this.#o);
  }

  /** The languages OpenAI documents for its voices (optimised for English). */
  languages(): readonly string[] {
    return OPENAI_AUDIO_LANGUAGES;
  }

  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    if (!text.trim()) return;
    const voice = options.voiceId && !options.voiceId.startsWith('flite-') ? options.voiceId : (this.#o.defaultVoice ?? 'alloy');
    const format = this.#o.responseFormat ?? 'pcm';
    const res = await post(
      'tts', this.id, this.#o, '/audio/speech',
      // `speed` is OpenAI's own (0.25 to 4): the agent's voice_speed (0.5 to 2) is within it.
      JSON.stringify({ model: this.#o.model, input: text, voice, response_format: format, ...(options.speed !== undefined && options.speed !== 1 ? { speed: options.speed } : {}) }),
      { 'content-type': 'application/json' },
      options.signal,
    );
    if (!res.body) throw new ProviderError('tts', this.id, 'empty response');
    let rate = format === 'pcm' ? (this.#o.pcmSampleRate ?? 24_000) : 0;
    let header = format === 'wav' ? Buffer.alloc(0) : undefined;
    let carry: Buffer = Buffer.alloc(0);
    let resampler: Awaited<ReturnType<typeof createResampler>> | undefined;
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read();
        if (done) break;
        options.signal?.throwIfAborted();
        let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (header !== undefined) {
          header = Buffer.concat([header, bytes]);
          if (header.length > MAX_WAV_HEADER_BYTES) throw new ProviderError('tts', this.id, `answer has no WAV data within its first ${MAX_WAV_HEADER_BYTES} bytes`);
          let layout: WavLayout | undefined;
          try {
            layout = wavLayoutSoFar(header);
          } catch (error) {
            throw new ProviderError('tts', this.id, `answer is not 16-bit PCM WAV: ${(error as Error).message}`);
          }
          if (!layout) continue;
          if (layout.channels !== 1) throw new ProviderError('tts', this.id, `answer has ${layout.channels} channels; mono expected`);
          rate = layout.sampleRate;
          bytes = header.subarray(layout.dataOffset);
          header = undefined;
        }
        resampler ??= await createResampler(rate, 16000);
        const all = carry.length ? Buffer.concat([carry, bytes]) : bytes;
        const even = all.length & ~1;
        carry = Buffer.from(all.subarray(even));
        const samples = new Int16Array(even / 2);
        for (let i = 0; i < samples.length; i++) samples[i] = all.readInt16LE(i * 2);
        const out = resampler.process(samples);
        if (out.length) yield out;
      }
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw e instanceof ProviderError ? e : new ProviderError('tts', this.id, 'audio stream interrupted', { retryable: true, cause: e });
    } finally {
      await reader.cancel().catch(() => {});
      resampler?.close();
    }
  }
}
