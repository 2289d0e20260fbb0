import type { NoiseSuppressor } from '../../providers/audio/rnnoise.ts';
import type { AudioFrame } from '../frames.ts';

/**
 * The caller's audio with the noise suppressed, frame for frame, before the VAD and the
 * recogniser hear it; without a denoiser (`no-denoise`) the frames pass through. The recording
 * keeps the caller's own audio: it is taken before the pipeline (src/media/call-session.ts).
 * Stops when `signal` aborts.
 */
export async function* denoiseStage(frames: AsyncIterable<AudioFrame>, denoiser: NoiseSuppressor | undefined, signal: AbortSignal): AsyncIterable<AudioFrame> {
  for await (const f of frames) {
    if (signal.aborted) return;
    yield denoiser ? { ...f, pcm: denoiser.process(f.pcm) } : f;
  }
}
