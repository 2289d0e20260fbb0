import { isAbortError } from '../providers/errors.ts';
import type { TtsCapabilities, TtsOptions, TtsProvider, VoiceInfo } from '../providers/tts.ts';

/** Why a call left a voice: the voice it left, the one it speaks with now, and the provider's error. */
export interface VoiceFallback {
  from: string;
  to: string;
  error: unknown;
}

/**
 * A call's voices in the order they are tried (Retell's `voice_id` then `fallback_voice_ids`),
 * seen by the pipeline as one synthesiser. When the current voice's provider fails before the
 * first audio of a piece of text (its socket refused or unreachable, a timeout, a 5xx: any
 * failure but the caller's abort), the same text is spoken by the next voice, and the call stays
 * on that voice: a provider that just failed is not asked again during the call, so no later
 * utterance waits for its failure. A failure after audio was heard ends the call as before
 * (`error_tts`): the rest of a sentence in another voice would be worse than the error.
 */
export class VoiceChain implements TtsProvider {
  readonly id: string;
  readonly #tts: TtsProvider;
  readonly #voices: readonly [string, ...string[]];
  readonly #onFallback: (fallback: VoiceFallback) => void;
  #at = 0;

  /** `voices`: voice ids of `tts` (as it lists them), the agent's first. */
  constructor(tts: TtsProvider, voices: readonly [string, ...string[]], onFallback: (fallback: VoiceFallback) => void) {
    this.#tts = tts;
    this.id = tts.id;
    this.#voices = voices;
    this.#onFallback = onFallback;
  }

  /** The voice the call speaks with now. */
  get voiceId(): string {
    return this.#voices[this.#at]!;
  }

  /** The voice speaking now when it is a fallback voice; undefined while the agent's own voice speaks. */
  get fallbackVoiceId(): string | undefined {
    return this.#at > 0 ? this.voiceId : undefined;
  }

  get capabilities(): TtsCapabilities | undefined {
    return this.#tts.capabilities;
  }

  get defaultVoiceId(): string {
    return this.#voices[0];
  }

  voices(): readonly VoiceInfo[] {
    return this.#tts.voices();
  }

  languages(): readonly string[] {
    return this.#tts.languages();
  }

  /** Speaks `text` with the current voice (`options.voiceId` is the chain's to choose), falling back as the class says. */
  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    for (;;) {
      const voiceId = this.voiceId;
      const it = this.#tts.synthesize(text, { ...options, voiceId })[Symbol.asyncIterator]();
      let first: IteratorResult<Int16Array>;
      try {
        first = await it.next();
      } catch (error) {
        const last = this.#at === this.#voices.length - 1;
        if (last || isAbortError(error) || options.signal?.aborted) throw error;
        this.#at++;
        this.#onFallback({ from: voiceId, to: this.voiceId, error });
        continue;
      }
      let done = first.done === true;
      try {
        if (!done) yield first.value;
        while (!done) {
          const next = await it.next();
          done = next.done === true;
          if (!done) yield next.value;
        }
      } finally {
        // Stopped early (barge-in): the provider's stream is released, as for-await would.
        if (!done) await it.return?.();
      }
      return;
    }
  }
}

/** The voice a fallback spoke with, when `tts` is a call's VoiceChain that fell back (for the transcript). */
export function fallbackVoiceOf(tts: TtsProvider): string | undefined {
  return tts instanceof VoiceChain ? tts.fallbackVoiceId : undefined;
}
