import rnnoiseFactory from '@echogarden/rnnoise-wasm';
import { createResampler, type Resampler } from './resample.ts';

/**
 * Noise suppression of one call's audio: RNNoise (Xiph's recurrent network, its model inside the
 * library, compiled to WASM). It runs at 48 kHz in 10 ms frames (480 samples) only; the call's
 * audio (16 kHz, or 8 kHz on a telephone-band call) is resampled up for it and back down to the
 * call's rate with the Speex resampler. An 8 kHz call's audio stays 8 kHz audio: RNNoise hears its
 * 0-4 kHz band at 48 kHz (its bands above 4 kHz empty, as on any telephone-band caller of a
 * wideband call), and what comes back is cut to 4 kHz again; nothing after it sees 16 kHz. One
 * suppressor per call: it keeps the network's state and the resamplers' filters between frames.
 */
export interface NoiseSuppressor {
  /** The denoised audio of `pcm` (mono at the call's rate), as many samples, about 3 ms later (the filters' delay). */
  process(pcm: Int16Array): Int16Array;
  /** Idempotent; frees the WASM state. */
  close(): void;
}

interface RnnoiseModule {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(state: number): void;
  _rnnoise_process_frame(state: number, outPtr: number, inPtr: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPF32: Float32Array;
}

/** RNNoise's frame: 10 ms at 48 kHz. */
const RNNOISE_FRAME = 480;
const RNNOISE_RATE = 48_000;

let modulePromise: Promise<RnnoiseModule> | undefined;
function rnnoise(): Promise<RnnoiseModule> {
  modulePromise ??= (rnnoiseFactory as unknown as () => Promise<RnnoiseModule>)();
  return modulePromise;
}

/** Creates one call's suppressor for audio at `rateHz` (default 16 kHz; the WASM module loads on first use). */
export async function createNoiseSuppressor(rateHz = 16_000): Promise<NoiseSuppressor> {
  const m = await rnnoise();
  const up = await createResampler(rateHz, RNNOISE_RATE);
  let down: Resampler;
  try {
    down = await createResampler(RNNOISE_RATE, rateHz);
  } catch (error) {
    up.close();
    throw error;
  }
  const state = m._rnnoise_create(0);
  const inPtr = m._malloc(RNNOISE_FRAME * 4);
  const outPtr = m._malloc(RNNOISE_FRAME * 4);
  if (!state || !inPtr || !outPtr) throw new Error('rnnoise: out of WASM memory');
  /** 48 kHz samples waiting for a whole RNNoise frame. */
  let pending = new Float32Array(0);
  /** Denoised samples at the call's rate not yet handed out. */
  let ready = new Int16Array(0);
  let closed = false;
  return {
    process(pcm: Int16Array): Int16Array {
      if (closed) throw new Error('noise suppressor closed');
      const wide = up.process(pcm);
      const work = new Float32Array(pending.length + wide.length);
      work.set(pending);
      work.set(wide, pending.length);
      const whole = work.length - (work.length % RNNOISE_FRAME);
      const clean = new Int16Array(whole);
      for (let at = 0; at < whole; at += RNNOISE_FRAME) {
        // RNNoise takes and gives floats on the 16-bit scale.
        m.HEAPF32.set(work.subarray(at, at + RNNOISE_FRAME), inPtr >> 2);
        m._rnnoise_process_frame(state, outPtr, inPtr);
        const out = m.HEAPF32.subarray(outPtr >> 2, (outPtr >> 2) + RNNOISE_FRAME);
        for (let i = 0; i < RNNOISE_FRAME; i++) clean[at + i] = Math.max(-32768, Math.min(32767, Math.round(out[i] ?? 0)));
      }
      pending = work.slice(whole);
      const narrow = down.process(clean);
      const queue = new Int16Array(ready.length + narrow.length);
      queue.set(ready);
      queue.set(narrow, ready.length);
      // As many samples out as in: until the filters have filled, the first ones are silence.
      const result = new Int16Array(pcm.length);
      const take = Math.min(pcm.length, queue.length);
      result.set(queue.subarray(0, take), pcm.length - take);
      ready = queue.slice(take);
      return result;
    },
    close(): void {
      if (closed) return;
      closed = true;
      m._rnnoise_destroy(state);
      m._free(inPtr);
      m._free(outPtr);
      up.close();
      down.close();
    },
  };
}

/** Creates one call's noise suppressor (Providers.denoiser; the agent's `denoising_mode` asks for it). */
export type NoiseSuppressorFactory = (rateHz?: 8000 | 16000) => Promise<NoiseSuppressor>;

/** Loads the WASM module; resolves false instead of throwing (for doctor()). */
export async function noiseSuppressionAvailable(): Promise<boolean> {
  try {
    await rnnoise();
    return true;
  } catch {
    return false;
  }
}
