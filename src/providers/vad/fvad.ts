import fvadFactory from '@echogarden/fvad-wasm';
import type { VadOptions, VadProvider, VoiceActivityDetector } from '../vad.ts';

interface FvadModule {
  _fvad_new(): number;
  _fvad_free(inst: number): void;
  _fvad_set_mode(inst: number, mode: number): number;
  _fvad_set_sample_rate(inst: number, rate: number): number;
  _fvad_process(inst: number, framePtr: number, samples: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAP16: Int16Array;
}

let modulePromise: Promise<FvadModule> | undefined;
function fvad(): Promise<FvadModule> {
  modulePromise ??= (fvadFactory as unknown as () => Promise<FvadModule>)();
  return modulePromise;
}

/**
 * WebRTC VAD (libfvad as WASM), at 16 kHz or natively at 8 kHz (VadOptions.sampleRateHz: libfvad
 * judges 8, 16, 32 and 48 kHz). One detector per call; each holds a few KB of WASM memory.
 */
export class FvadProvider implements VadProvider {
  readonly id = 'fvad';

  async create(options: VadOptions = {}): Promise<VoiceActivityDetector> {
    const m = await fvad();
    const inst = m._fvad_new();
    if (!inst) throw new Error('fvad_new failed');
    m._fvad_set_mode(inst, options.aggressiveness ?? 2);
    const rate = options.sampleRateHz ?? 16_000;
    if (m._fvad_set_sample_rate(inst, rate) !== 0) {
      m._fvad_free(inst);
      throw new Error(`fvad: sample rate ${String(rate)} Hz is not judged`);
    }
    /** 10 ms at the rate: libfvad takes 10, 20 or 30 ms frames. */
    const tenMs = rate / 100;
    const maxSamples = tenMs * 3;
    const buf = m._malloc(maxSamples * 2);
    let closed = false;
    // libfvad's noise model starts untrained and flags the first frames of plain room noise as
    // speech (seen here: a false onset 60 ms into every call); its verdicts count after warm-up.
    let warmup = options.warmupFrames ?? 10;
    const judge = (frame: Int16Array): boolean => {
      // libfvad accepts 10, 20 or 30 ms frames only; anything else is judged in 10 ms pieces.
      if (frame.length === tenMs || frame.length === tenMs * 2 || frame.length === tenMs * 3) {
        m.HEAP16.set(frame, buf >> 1);
        return m._fvad_process(inst, buf, frame.length) === 1;
      }
      let voiced = false;
      for (let i = 0; i + tenMs <= frame.length; i += tenMs) {
        m.HEAP16.set(frame.subarray(i, i + tenMs), buf >> 1);
        if (m._fvad_process(inst, buf, tenMs) === 1) voiced = true;
      }
      return voiced;
    };
    return {
      isSpeech(frame: Int16Array): boolean {
        if (closed) return false;
        const voiced = judge(frame);
        if (warmup > 0) {
          warmup--;
          return false;
        }
        return voiced;
      },
      close(): void {
        if (closed) return;
        closed = true;
        m._fvad_free(inst);
        m._free(buf);
      },
    };
  }
}

/** Loads the WASM module; resolves false instead of throwing (for doctor()). */
export async function fvadAvailable(): Promise<boolean> {
  try {
    await fvad();
    return true;
  } catch {
    return false;
  }
}
