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

/** WebRTC VAD (libfvad as WASM), 16 kHz. One detector per call; each holds a few KB of WASM memory. */
export class FvadProvider implements VadProvider {
  readonly id = 'fvad';

  async create(options: VadOptions = {}): Promise<VoiceActivityDetector> {
    const m = await fvad();
    const inst = m._fvad_new();
    if (!inst) throw new Error('fvad_new failed');
    m._fvad_set_mode(inst, options.aggressiveness ?? 2);
    m._fvad_set_sample_rate(inst, 16000);
    const maxSamples = 480; // 30 ms at 16 kHz
    const buf = m._malloc(maxSamples * 2);
    let closed = false;
    // libfvad's noise model starts untrained and flags the first frames of plain room noise as
    // speech (seen here: a false onset 60 ms into every call); its verdicts count after warm-up.
    let warmup = options.warmupFrames ?? 10;
    const judge = (frame: Int16Array): boolean => {
      // libfvad accepts 10, 20 or 30 ms frames only; anything else is judged in 10 ms pieces.
      if (frame.length === 160 || frame.length === 320 || frame.length === 480) {
        m.HEAP16.set(frame, buf >> 1);
        return m._fvad_process(inst, buf, frame.length) === 1;
      }
      let voiced = false;
      for (let i = 0; i + 160 <= frame.length; i += 160) {
        m.HEAP16.set(frame.subarray(i, i + 160), buf >> 1);
        if (m._fvad_process(inst, buf, 160) === 1) voiced = true;
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
