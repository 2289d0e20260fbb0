import speexFactory from '@echogarden/speex-resampler-wasm';

/** Streaming 16-bit mono resampler (Speex, compiled to WASM). Keeps filter state between chunks. */
export interface Resampler {
  readonly inputRate: number;
  readonly outputRate: number;
  /** Resamples one chunk; output length is about input * outputRate / inputRate. */
  process(pcm: Int16Array): Int16Array;
  /** Idempotent; frees the WASM state. */
  close(): void;
}

interface SpeexModule {
  _speex_resampler_init(channels: number, inRate: number, outRate: number, quality: number, errPtr: number): number;
  _speex_resampler_process_int(st: number, channel: number, inPtr: number, inLenPtr: number, outPtr: number, outLenPtr: number): number;
  _speex_resampler_destroy(st: number): void;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAP16: Int16Array;
  HEAPU32: Uint32Array;
}

let modulePromise: Promise<SpeexModule> | undefined;
function speex(): Promise<SpeexModule> {
  modulePromise ??= (speexFactory as unknown as () => Promise<SpeexModule>)();
  return modulePromise;
}

/** Loads the WASM module ahead of time (optional; createResampler loads it on first use). */
export async function loadResampler(): Promise<void> {
  await speex();
}

/**
 * Creates a resampler. `quality` 0..10 (Speex), default 5 (the VoIP default). When the rates are
 * equal the returned object copies through.
 */
export async function createResampler(inputRate: number, outputRate: number, quality = 5): Promise<Resampler> {
  if (inputRate === outputRate) {
    return { inputRate, outputRate, process: (pcm) => pcm.slice(), close: () => {} };
  }
  const m = await speex();
  const errPtr = m._malloc(4);
  const st = m._speex_resampler_init(1, inputRate, outputRate, quality, errPtr);
  m._free(errPtr);
  if (!st) throw new Error('speex resampler init failed');
  let closed = false;
  let cap = 0;
  let inPtr = 0;
  let outPtr = 0;
  const lens = m._malloc(8);
  return {
    inputRate,
    outputRate,
    process(pcm: Int16Array): Int16Array {
      if (closed) throw new Error('resampler closed');
      const outCap = Math.ceil((pcm.length * outputRate) / inputRate) + 64;
      if (pcm.length > cap || outCap > cap) {
        if (inPtr) m._free(inPtr);
        if (outPtr) m._free(outPtr);
        cap = Math.max(pcm.length, outCap) * 2;
        inPtr = m._malloc(cap * 2);
        outPtr = m._malloc(cap * 2);
      }
      m.HEAP16.set(pcm, inPtr >> 1);
      m.HEAPU32[lens >> 2] = pcm.length;
      m.HEAPU32[(lens >> 2) + 1] = outCap;
      m._speex_resampler_process_int(st, 0, inPtr, lens, outPtr, lens + 4);
      const produced = m.HEAPU32[(lens >> 2) + 1] ?? 0;
      return m.HEAP16.slice(outPtr >> 1, (outPtr >> 1) + produced);
    },
    close(): void {
      if (closed) return;
      closed = true;
      m._speex_resampler_destroy(st);
      if (inPtr) m._free(inPtr);
      if (outPtr) m._free(outPtr);
      m._free(lens);
    },
  };
}
