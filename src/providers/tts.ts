/**
 * Text-to-speech. Output is 16-bit mono PCM at 16 kHz (implementations resample), or at
 * TtsOptions.sampleRateHz where the engine states that rate in TtsCapabilities.outputSampleRates.
 */
export interface TtsOptions {
  /** One of the provider's `voices()` ids: 'flite-kal16' (Flite's default), 'flite-slt', ...; or an OpenAI voice name. */
  voiceId?: string;
  signal?: AbortSignal;
  /**
   * Speaking rate, 0.5 to 2 (the agent's `voice_speed`; 1, the default, is the voice's own rate).
   * Providers apply it as their API allows (docs/providers.md#speaking-rate).
   */
  speed?: number;
  /** How words are to be said (the agent's `pronunciation_dictionary`), for providers that take phonemes. */
  pronunciations?: readonly Pronunciation[];
  /**
   * Rate of the audio to give, Hz: 8000 for a telephone-band call; default 16000. Only a rate the
   * engine lists in TtsCapabilities.outputSampleRates is asked for (src/voice/tts-rate.ts).
   */
  sampleRateHz?: 8000 | 16000;
}

/** How an agent's speech is to be said, the same for every piece of text (the agent's Retell fields). */
export type SpeechStyle = Pick<TtsOptions, 'speed' | 'pronunciations'>;

/** One entry of Retell's `pronunciation_dictionary`: `word` said as `phoneme`, written in `alphabet`. */
export interface Pronunciation {
  readonly word: string;
  /** 'ipa' or 'cmu' (ARPAbet); 'pinyin' and 'jyutping' are kept but no English voice reads them. */
  readonly alphabet: string;
  readonly phoneme: string;
}

/**
 * A voice a speech engine offers agents, in the wire shape of `GET /list-voices` (Retell's voice
 * object, plus what we know of the audio: language and sample rate).
 */
export interface VoiceInfo {
  /** The agent's `voice_id` for this voice. */
  readonly voice_id: string;
  readonly voice_name: string;
  /** The engine that speaks it: 'flite', 'openai', 'fake'. */
  readonly provider: string;
  /** null where the engine does not say. */
  readonly gender: 'male' | 'female' | null;
  readonly accent?: string;
  readonly age?: string;
  /** BCP-47 tag of the language the voice was made for. */
  readonly language: string;
  /** The voice also speaks the other languages of its engine's `languages()`. */
  readonly multilingual: boolean;
  /** Sample rate the engine produces the voice at, Hz (the pipeline resamples to 16 kHz). */
  readonly sample_rate_hz: number;
  /** What the voice sounds like and what it suits. */
  readonly description: string;
}

/** What a speech engine can do; stated like SttCapabilities (see there). */
export interface TtsCapabilities {
  /** The first audio of a text is handed out before the whole text is synthesized. */
  readonly streaming: boolean;
  /** The languages it speaks, as `languages()` gives them. */
  readonly languages: readonly string[];
  /** The `voice_id`s agents may choose, as `voices()` lists them. */
  readonly voices: readonly string[];
  /**
   * Rates besides 16 kHz the engine makes itself when TtsOptions.sampleRateHz asks (8000: its
   * API has a telephone-band output); absent: 16 kHz only, and a call at 8 kHz resamples it once.
   */
  readonly outputSampleRates?: readonly number[];
}

export interface TtsProvider {
  readonly id: string;
  /** What it can do as it runs here. Optional for engines built outside the catalog (tests, embedders). */
  readonly capabilities?: TtsCapabilities;
  /** The voices agents may choose; every `voiceId` given to synthesize() should be one of them. */
  voices(): readonly VoiceInfo[];
  /** Voice of agents created without a `voice_id`; one of voices(). */
  readonly defaultVoiceId: string;
  /**
   * Languages the engine speaks, as src/lib/language-tags.ts reads them: exact tags ('en-US'),
   * primary subtags ('fr': any French) or '*' (any tag).
   */
  languages(): readonly string[];
  /** Synthesizes one piece of text (a sentence, ideally) into PCM chunks; rejects with ProviderError kind 'tts'. */
  synthesize(text: string, options?: TtsOptions): AsyncIterable<Int16Array>;
  /**
   * A reply's text given to the synthesiser as it streams, on one generation (ElevenLabs'
   * stream-input socket, a Cartesia context with `continue: true`); undefined where the engine
   * (or the voice's engine) takes whole pieces of text only, which are then synthesised one by one.
   */
  openTextStream?(options: TtsOptions): TtsTextStream | undefined;
  /** Releases shared resources (idempotent). */
  close?(): Promise<void>;
}

/** A word the synthesiser spoke, where it is in the stream's audio, ms from its first sample. */
export interface SpokenWord {
  readonly text: string;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * Text streamed into one generation: written as it arrives, spoken as the provider's buffering
 * allows or at once on flush(). The socket opens when the stream is made; its failures reach the
 * reader of audio() as ProviderError kind 'tts'.
 */
export interface TtsTextStream {
  /** Whole words as they arrive (the text ends with whitespace, or is the end of the reply). */
  write(text: string): void;
  /** Speak what was written so far without waiting for more text. */
  flush(): void;
  /** No more text: the audio ends once everything written is spoken. Idempotent. */
  end(): void;
  /** The audio in order (16 kHz PCM). Stopping early (barge-in) or `options.signal` cancels the generation. */
  audio(): AsyncIterable<Int16Array>;
  /** The words spoken so far, from the provider's alignment or timestamps, in order. */
  words(): readonly SpokenWord[];
}
