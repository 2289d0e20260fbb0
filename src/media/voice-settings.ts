import type { AgentConfig } from '../domain/agent.ts';
import type { Logger } from '../lib/logger.ts';
import { preemptiveRepliesAvailable } from '../providers/features.ts';
import type { Providers } from '../providers/registry.ts';
import { callVoices } from './call-voices.ts';
import { DEFAULT_BACKCHANNEL_FREQUENCY, DEFAULT_DTMF_OPTIONS, type VoicePipelineOptions } from '../voice/index.ts';

/** The pipeline options an agent's settings decide: how it sounds, listens and takes turns. */
export type VoiceSettings = Pick<
  VoicePipelineOptions,
  'tts' | 'voiceId' | 'volume' | 'normaliseForSpeech' | 'speech' | 'backchannel' | 'denoiser' | 'language' | 'interruptionSensitivity' | 'endOfTurn' | 'boostedKeywords' | 'dtmf' | 'preemptive' | 'turnTrace'
>;

/**
 * An agent's settings (with the call's override applied) as voice-pipeline options, over the
 * server's providers. Versions saved before a setting existed take its default.
 */
export function voiceSettings(settings: AgentConfig, providers: Providers, log: Logger): VoiceSettings {
  return {
    // The agent's voice, then its fallback voices when a provider fails (issue 26; media/call-voices.ts).
    ...callVoices(providers.tts, settings, log),
    // Retell's agent fields (issue 26); versions saved before them have neither.
    volume: settings.volume ?? 1,
    normaliseForSpeech: settings.normalize_for_speech ?? false,
    speech: { speed: settings.voice_speed ?? 1, pronunciations: settings.pronunciation_dictionary ?? [] },
    // Retell's backchannels (issue 26): short words while the caller speaks at length, out of the transcript.
    ...(settings.enable_backchannel ? { backchannel: { frequency: settings.backchannel_frequency ?? DEFAULT_BACKCHANNEL_FREQUENCY, words: settings.backchannel_words ?? [] } } : {}),
    // Retell's denoising_mode (issue 25), with the server's suppressor; a call stored before it takes the default, no-denoise.
    denoiser: settings.denoising_mode === 'noise-cancellation' ? providers.denoiser : undefined,
    language: settings.language,
    interruptionSensitivity: settings.interruption_sensitivity,
    endOfTurn: {
      responsiveness: settings.responsiveness,
      minSilenceMs: settings.end_of_turn_min_silence_ms,
      maxSilenceMs: settings.end_of_turn_max_silence_ms,
    },
    boostedKeywords: settings.boosted_keywords,
    // Keypad input from a phone (issue 24): Retell's user_dtmf_options over our defaults.
    ...(settings.allow_user_dtmf
      ? {
          dtmf: {
            digitLimit: settings.user_dtmf_options?.digit_limit ?? DEFAULT_DTMF_OPTIONS.digitLimit,
            terminationKey: settings.user_dtmf_options?.termination_key === undefined ? DEFAULT_DTMF_OPTIONS.terminationKey : settings.user_dtmf_options.termination_key,
            timeoutMs: settings.user_dtmf_options?.timeout_ms ?? DEFAULT_DTMF_OPTIONS.timeoutMs,
          },
        }
      : {}),
    // Preemptive replies need a recogniser with interim results (cli doctor says whether this one has them).
    preemptive: settings.preemptive_replies && preemptiveRepliesAvailable(providers.stt).ok,
    // Where each reply's time went (src/voice/turn-trace.ts): at debug level, for diagnosis and the browser bench.
    turnTrace: (trace) => log.debug({ turn: trace }, 'turn timing'),
  };
}
