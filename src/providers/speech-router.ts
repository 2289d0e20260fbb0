import type { TtsCapabilities, TtsOptions, TtsProvider, TtsTextStream, VoiceInfo } from './tts.ts';

/**
 * Several speech providers configured at once (TTS_PROVIDER and TTS_EXTRA_PROVIDERS) seen as one:
 * their voices side by side, each `voiceId` spoken by the provider that lists it (the voice id's
 * prefix tells them apart: `11labs-`, `cartesia-`, OpenAI's names, Flite's `flite-`), any other by
 * the first (the TTS_PROVIDER one, whose default voice is the server's). Which voice a call falls
 * back to when its provider fails is the call's business (src/voice/voice-fallback.ts).
 */
export class SpeechRouter implements TtsProvider {
  readonly id: string;
  readonly defaultVoiceId: string;
  readonly capabilities?: TtsCapabilities;
  readonly #engines: readonly TtsProvider[];
  /** voice_id -> the engine that speaks it; the first engine listing an id keeps it. */
  readonly #byVoice = new Map<string, TtsProvider>();

  /** `engines`: the TTS_PROVIDER one first, then the others in the order configured. */
  constructor(engines: readonly [TtsProvider, ...TtsProvider[]]) {
    const primary = engines[0];
    this.#engines = engines;
    this.id = primary.id;
    this.defaultVoiceId = primary.defaultVoiceId;
    for (const engine of engines) for (const v of engine.voices()) if (!this.#byVoice.has(v.voice_id)) this.#byVoice.set(v.voice_id, engine);
    const caps = engines.map((e) => e.capabilities);
    if (caps.every((c): c is TtsCapabilities => c !== undefined)) {
      this.capabilities = {
        // Streaming only when every voice streams: a feature reading it must hold for any voice.
        streaming: caps.every((c) => c.streaming),
        languages: this.languages(),
        voices: [...this.#byVoice.keys()],
      };
    }
  }

  /** The provider that speaks `voiceId` (the first one for a voice none lists). */
  engineOf(voiceId: string | undefined): TtsProvider {
    return (voiceId === undefined ? undefined : this.#byVoice.get(voiceId)) ?? this.#engines[0]!;
  }

  voices(): readonly VoiceInfo[] {
    return this.#engines.flatMap((e) => e.voices().filter((v) => this.#byVoice.get(v.voice_id) === e));
  }

  /** Every language some configured voice speaks. */
  languages(): readonly string[] {
    return [...new Set(this.#engines.flatMap((e) => e.languages()))];
  }

  synthesize(text: string, options?: TtsOptions): AsyncIterable<Int16Array> {
    return this.engineOf(options?.voiceId).synthesize(text, options);
  }

  /** A text stream where the voice's own provider takes one (undefined otherwise). */
  openTextStream(options: TtsOptions): TtsTextStream | undefined {
    return this.engineOf(options.voiceId).openTextStream?.(options);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#engines.map(async (e) => e.close?.()));
  }
}
