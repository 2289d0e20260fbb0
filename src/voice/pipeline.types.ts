import type { DtmfOptions } from './dtmf.ts';
import type { BackchannelSettings } from './backchannel.ts';
import type { CallSampleRate } from './frames.ts';
/**
 * The events and options of a VoicePipeline (src/voice/pipeline.ts).
 */
import type { Scheduler } from '../lib/scheduler.ts';
import type { SttProvider } from '../providers/stt.ts';
import type { SpeechStyle, TtsProvider } from '../providers/tts.ts';
import type { VadProvider } from '../providers/vad.ts';
import type { ResponseEngine } from './engines/types.ts';
import type { EndOfTurnSettings } from './end-of-turn.ts';
import type { TurnTrace } from './turn-trace.ts';
import type { NoiseSuppressorFactory } from '../providers/audio/rnnoise.ts';
import type { TurnLatency } from './latency.ts';
import type { TimedToolCall, Utterance } from './transcript.ts';

/** How far the agent's audio is sent ahead of real time by default, ms (VoicePipelineOptions.outputLeadMs). */
export const DEFAULT_OUTPUT_LEAD_MS = 80;

/** Why a call fails inside the pipeline: a provider (by kind), or an error nothing expected (a bug: `error_unknown`). */
export type FailureReason = 'error_asr' | 'error_llm' | 'error_tts' | 'error_unknown';
/** Why the pipeline ends the call: the agent hung up, transferred the call (a phone call), or a stage failed. */
export type HangupReason = 'agent_hangup' | 'call_transfer' | 'voicemail_reached' | FailureReason;

/** Events of a VoicePipeline; listeners are called synchronously, in order of registration. */
export interface PipelineEvents {
  /** One 20 ms frame (mono, at the call's `sampleRateHz`: 320 samples at 16 kHz) of agent speech, paced at real time plus `outputLeadMs`. */
  agent_audio: (pcm: Int16Array) => void;
  /** `atMs`: where the reply begins on the call's timeline (its utterance's start), ms since the pipeline started. */
  agent_start_talking: (info: { atMs: number }) => void;
  /** `interrupted`: the user barged in; a transport should drop any agent audio it still buffers. */
  agent_stop_talking: (info: { interrupted: boolean }) => void;
  user_start_talking: () => void;
  /** The whole transcript so far (a new array each time). */
  transcript_update: (transcript: readonly Utterance[]) => void;
  /**
   * An interim hypothesis of the user's utterance being spoken: the whole text heard so far, which
   * the next interim or the final transcript may revise. Only from streaming recognisers
   * (SttOpenOptions.onInterim); never emitted after the turn has ended.
   */
  user_interim: (info: { text: string }) => void;
  /**
   * Once per call, after BAND_SAMPLE_MS of the user's voiced audio: whether it carries energy above
   * 4 kHz ('wide') or went through an 8 kHz channel ('narrow': a phone line, a hands-free Bluetooth
   * headset), which the embedded recogniser hears badly (src/providers/audio/band.ts).
   */
  audio_band: (info: { band: 'wide' | 'narrow'; highFraction: number }) => void;
  /**
   * The call should end now; emitted once. Errors are preceded by an `error` event. With
   * `call_transfer`, `transferTo` is where the call went: the carrier took it on (`transfer`).
   */
  hangup: (info: { reason: HangupReason; transferTo?: string }) => void;
  /** `message` is the failure's own; `cause` is the error itself (its `cause` chain may quote an upstream's answer: log it, never show it). */
  error: (info: { reason: FailureReason; message: string; cause: unknown }) => void;
  /** One record per agent reply that produced audio. */
  latency: (record: TurnLatency) => void;
  /** A function call's invocation or result, as the engine reported it (the call's record keeps them). */
  tool_call: (call: TimedToolCall) => void;
  /**
   * The agent says a backchannel (`word`) while the user speaks, out of band (voice/backchannel.ts):
   * its frames follow as `agent_audio` without `agent_start_talking`; `atMs` places them on the call's timeline.
   */
  backchannel: (info: { atMs: number; word: string }) => void;
  /** Once per kind: the call's transcript or function-call records reached their bound (src/voice/record-bounds.ts). */
  record_bound: (info: { what: 'transcript' | 'tool_calls' }) => void;
}

export interface VoicePipelineOptions {
  /** How keypad input becomes turns (a phone's DTMF, `pushDigits`); absent: keys are ignored (agent's allow_user_dtmf false). */
  dtmf?: DtmfOptions;
  /**
   * Hands the call to a number or SIP URI (a phone endpoint's cold transfer), when the engine asks
   * (EngineHangup `call_transfer`), after its words have played; rejects when the carrier refused.
   * Absent: the call cannot be transferred (a web call).
   */
  transfer?: (destination: string) => Promise<void>;
  stt: SttProvider;
  tts: TtsProvider;
  vad: VadProvider;
  engine: ResponseEngine;
  /** TTS voice; default the provider's default (flite-kal16). */
  voiceId?: string;
  /** Gain on the agent's speech, 0 to 2 (the agent's `volume`, voice/volume.ts); default 1. */
  volume?: number;
  /** Numbers, dates and times spoken as words (the agent's `normalize_for_speech`, voice/speech-normaliser.ts). */
  normaliseForSpeech?: boolean;
  /** Speaking rate and pronunciations handed to the synthesiser (the agent's `voice_speed`, `pronunciation_dictionary`). */
  speech?: SpeechStyle;
  /** Short words said while the user speaks at length (the agent's `enable_backchannel` and its settings); absent: none. */
  backchannel?: BackchannelSettings;
  /** The call's BCP-47 language, handed to the recogniser (SttOpenOptions.language); default the provider's. */
  language?: string;
  /**
   * 0..1, default 1. How readily the user's speech interrupts the agent: 1 needs 60 ms of speech,
   * 0.5 about 280 ms, 0 never interrupts.
   */
  interruptionSensitivity?: number;
  /** Who speaks first; default 'agent'. */
  startSpeaker?: 'agent' | 'user';
  /** With startSpeaker 'user': the agent begins after this much user silence, ms; default: never. */
  beginAfterUserSilenceMs?: number;
  /** Silence that ends the user's turn, ms; default 500. Ignored with `endOfTurn`. */
  endpointingMs?: number;
  /**
   * Adaptive end of turn (the agent's responsiveness and minimum / maximum end-of-turn silence):
   * the silence that ends the turn follows what the streaming recogniser has heard so far
   * (src/voice/end-of-turn.ts). Default: the fixed `endpointingMs`.
   */
  endOfTurn?: EndOfTurnSettings;
  /** Where each reply's time went, after its latency record (diagnostics: src/voice/turn-trace.ts). */
  turnTrace?: (trace: TurnTrace) => void;
  /**
   * Words the recogniser should expect throughout the call (the agent's boosted_keywords). Before
   * each user turn the pipeline hands the recogniser these plus the engine's expectedPhrases()
   * (SttStream.bias; SttOpenOptions.keywords at the start).
   */
  boostedKeywords?: readonly string[];
  /**
   * Longest wait for a turn's transcript once the turn has ended, ms; default 5000. A recogniser
   * that has not answered by then fails the turn, and the call ends with `error_asr` as on any
   * recognition failure, instead of the agent falling silent (docs/voice-pipeline.md).
   */
  recognitionTimeoutMs?: number;
  /**
   * Preemptive replies (the agent's `preemptive_replies`): once the user has paused
   * PREEMPT_AFTER_MS after words that complete a sentence, the engine and synthesis start on the
   * interim transcript; the reply plays only if the turn then ends with that same text, and is
   * thrown away (the engine rolled back, its side effects never run) if the user goes on.
   * Needs a streaming recogniser and an engine with `checkpoint`. Default false.
   */
  preemptive?: boolean;
  /**
   * Noise suppression of the caller's audio before the VAD and the recogniser (the agent's
   * `denoising_mode`, src/voice/stages/denoise.stage.ts): one denoiser per call, created at start
   * and closed at close. Absent: the audio is heard as it came.
   */
  denoiser?: NoiseSuppressorFactory;
  /** WebRTC VAD aggressiveness 0..3; default 2. */
  vadAggressiveness?: 0 | 1 | 2 | 3;
  /** Frames below this RMS (0..32768) are never speech; default 150 (about -47 dBFS). */
  minSpeechRms?: number;
  /**
   * The pipeline's clock and timers (the call session's): its monotonic time, the 10 ms pacing
   * timer and the recognition deadlines. Default the real ones; tests pass a ManualScheduler.
   */
  scheduler?: Scheduler;
  /**
   * Run a 10 ms timer that paces agent audio; default true. With false, output is paced only
   * when pushAudio() is called (lock-step: tests and transports that feed audio continuously).
   */
  timers?: boolean;
  /**
   * The endpoint's played position of the reply playing, ms, where the endpoint reports one
   * (CallEndpoint.playedMs); what the caller heard of a reply cut off is read from it. Absent: the
   * pacer's estimate (what real time has played of what was sent).
   */
  playedMs?: () => number | undefined;
  /** How far agent audio may run ahead of real time, ms; default DEFAULT_OUTPUT_LEAD_MS. Bounds barge-in latency. */
  outputLeadMs?: number;
  /**
   * How far the caller's audio may arrive behind the call's clock before the timeline takes the
   * time between for a gap the caller never sent and skips it, ms; default MAX_INPUT_LAG_MS (300).
   * The endpoint's (CallEndpoint.maxInputLagMs).
   */
  maxInputLagMs?: number;
  /**
   * The call's audio rate both ways, Hz: what pushAudio() takes and `agent_audio` gives; the
   * endpoint's (CallEndpoint.sampleRate). Default 16000. At 8000 (a telephone-band call) the
   * frames, the VAD and the recogniser run at 8 kHz (a recogniser that decodes only 16 kHz is fed
   * a resampled copy), and the agent's voice is made at 8 kHz (src/voice/call-rate.ts).
   */
  sampleRateHz?: CallSampleRate;
  /** Input frames queued before the oldest are dropped; default 50 (1 s). */
  inputQueueFrames?: number;
  /** Agent frames synthesized ahead of playback before synthesis waits; default 1500 (30 s). */
  outputQueueFrames?: number;
}
