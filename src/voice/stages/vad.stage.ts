import type { VoiceActivityDetector } from '../../providers/vad.ts';
import { rms, type AudioFrame } from '../frames.ts';

/** A frame with the detector's verdict. */
export interface VadFrame extends AudioFrame {
  readonly speech: boolean;
}

/** Frames quieter than this RMS are never speech (about -47 dBFS); default of vadStage. */
export const DEFAULT_MIN_SPEECH_RMS = 150;

/**
 * Labels each 20 ms frame as speech or not. The WebRTC VAD judges spectral shape, not loudness,
 * and flags faint noise after digital silence as speech (seen here), so an energy floor
 * `minSpeechRms` gates it. Stops when `signal` aborts.
 */
export async function* vadStage(
  frames: AsyncIterable<AudioFrame>,
  vad: VoiceActivityDetector,
  signal: AbortSignal,
  minSpeechRms = DEFAULT_MIN_SPEECH_RMS,
): AsyncIterable<VadFrame> {
  for await (const f of frames) {
    if (signal.aborted) return;
    const voiced = vad.isSpeech(f.pcm) && rms(f.pcm) >= minSpeechRms;
    yield { ...f, speech: voiced };
  }
}
