import type { VoiceActivityDetector } from '../../providers/vad.ts';
import type { AudioFrame } from '../frames.ts';

/** A frame with the detector's verdict. */
export interface VadFrame extends AudioFrame {
  readonly speech: boolean;
}

/** Labels each 20 ms frame as speech or not. Stops when `signal` aborts. */
export async function* vadStage(frames: AsyncIterable<AudioFrame>, vad: VoiceActivityDetector, signal: AbortSignal): AsyncIterable<VadFrame> {
  for await (const f of frames) {
    if (signal.aborted) return;
    yield { pcm: f.pcm, offsetMs: f.offsetMs, speech: vad.isSpeech(f.pcm) };
  }
}
