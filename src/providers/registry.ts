import { descriptorFor } from './catalog.ts';
import type { ProviderRole } from './descriptor.ts';
import type { LlmProvider } from './llm.ts';
import type { SttProvider } from './stt.ts';
import type { TtsProvider } from './tts.ts';
import type { VadProvider } from './vad.ts';
import { createNoiseSuppressor, type NoiseSuppressorFactory } from './audio/rnnoise.ts';
import { SpeechRouter } from './speech-router.ts';

/**
 * A role's provider as configuration chose it: the descriptor's id and the options its
 * fromConfig returned (plain data, read only by that descriptor).
 */
export interface ProviderChoice {
  readonly id: string;
  readonly options: unknown;
}

/**
 * Which engines the server uses; plain data, read from the environment by src/config/media.config.ts
 * through the descriptors of src/providers/catalog.ts. No `llm`: no LLM is configured.
 */
export interface ProviderOptions {
  llm?: ProviderChoice;
  stt: ProviderChoice;
  tts: ProviderChoice;
  /**
   * Speech providers configured beside `tts` (TTS_EXTRA_PROVIDERS), each with its own options: an
   * agent's `voice_id` or `fallback_voice_ids` may name their voices. Absent or empty: `tts` alone.
   */
  ttsExtra?: readonly ProviderChoice[];
  vad: ProviderChoice;
}

export interface Providers {
  /** Undefined when no LLM is configured (flows that need one are refused: see flowNeedsLlm). */
  llm: LlmProvider | undefined;
  stt: SttProvider;
  tts: TtsProvider;
  vad: VadProvider;
  /**
   * The noise suppressor calls whose agent asks for it (`denoising_mode`) run on the caller's
   * audio (RNNoise, embedded); absent (test provider sets): no call is denoised.
   */
  denoiser?: NoiseSuppressorFactory;
  /** Closes providers that hold shared resources (the Flite worker); idempotent. */
  close(): Promise<void>;
}

/**
 * What the engines offer agents, for the agent checks and GET /list-voices (the shape of
 * src/domain/voice.ts's SpeechCatalog; providers do not import the domain, the composition root
 * hands one to the other).
 */
export function speechCatalog(providers: Pick<Providers, 'stt' | 'tts'>) {
  const { stt, tts } = providers;
  return {
    recogniser: { id: stt.id, languages: stt.languages() },
    synthesiser: { id: tts.id, languages: tts.languages(), voices: tts.voices(), defaultVoiceId: tts.defaultVoiceId },
  };
}

function build<R extends ProviderRole>(role: R, choice: ProviderChoice) {
  return descriptorFor(role, choice.id).create(choice.options);
}

/** Builds the providers; never fails for a missing engine (see doctor()): calls fail with a reason instead. */
export function buildProviders(options: ProviderOptions): Providers {
  const llm = options.llm && build('llm', options.llm);
  const stt = build('stt', options.stt);
  const primary = build('tts', options.tts);
  const extra = (options.ttsExtra ?? []).map((choice) => build('tts', choice));
  const tts = extra.length > 0 ? new SpeechRouter([primary, ...extra]) : primary;
  const vad = build('vad', options.vad);
  let closed = false;
  return {
    llm,
    stt,
    tts,
    vad,
    denoiser: createNoiseSuppressor,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([tts.close?.(), stt.close?.()]);
    },
  };
}
