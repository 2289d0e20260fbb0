import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { abortable } from '../../lib/abortable.ts';
import type { SttCapabilities, SttExpectation, SttInterim, SttOpenOptions, SttProvider, SttResult, SttStream } from '../stt.ts';
import { ProviderError } from '../errors.ts';
import { DecoderPool, type DecoderPoolOptions, type Lease } from './decoder-pool.ts';
import type { CmnState, DecoderOut, DecoderWorkerData } from './decoder.worker.ts';
import { languageModelDictionary } from './vocabulary.ts';

/** Where Debian's pocketsphinx-en-us puts the US English model. */
export const DEBIAN_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export interface PocketsphinxOptions {
  /** Binary name or path; default 'pocketsphinx_continuous' (Debian package `pocketsphinx`). */
  binary?: string;
  /** Model directory holding en-us/, en-us.lm.bin and cmudict-en-us.dict; default DEBIAN_MODEL_DIR. */
  modelDir?: string;
  /** Extra decoder flags, e.g. ['-kws_threshold', '1e-20']. */
  extraArgs?: readonly string[];
  /** Longest audio one utterance may carry before it is finalized anyway, ms; default 30 000. */
  maxUtteranceMs?: number;
  /**
   * How to run the decoder; default 'auto'. 'library': in-process through libpocketsphinx (the
   * optional npm package koffi and the Debian library), on decoders loaded once and shared by the
   * calls' utterances (decoder-pool.ts), decoding while the caller speaks, with interim hypotheses. 'process': one pocketsphinx_continuous
   * process per utterance (no interim hypotheses). 'auto': 'library' when it loads, else 'process'.
   */
  mode?: 'auto' | 'library' | 'process';
  /** Audio between two interim hypotheses in library mode, ms; default 200. */
  interimEveryMs?: number;
  /** Audio between two reports of how far the decoder has got (pendingMs), ms; default 0: after every chunk written. */
  progressEveryMs?: number;
  /** Where library-mode streams get their decoders; default a pool of the provider's own, sized by `pool`. */
  decoders?: DecoderPool;
  /** The bounds of the provider's own pool (when `decoders` is not given). */
  pool?: DecoderPoolOptions;
  /**
   * Library mode: whether a call's first utterance at a node expecting something, heard without
   * it, is decoded again on the cepstral mean learnt from it (decoder.worker.ts,
   * decodeOnLearntMean); default true. false: the benchmarks' baseline.
   */
  redecodeFirstUtterance?: boolean;
  /**
   * Whether a telephone-band call's stream (SttOpenOptions.sourceSampleRateHz 8000, given a 16 kHz
   * copy) starts on the telephone band's cepstral mean (telephoneBandMean) instead of the model's
   * -cmninit; default true. false: the benchmarks' baseline.
   */
  telephoneBandMean?: boolean;
}

/** Which way the decoder runs (see PocketsphinxOptions.mode). */
export type PocketsphinxMode = 'library' | 'process';

let libraryProbe: { ok: true } | { ok: false; why: string } | undefined;

/**
 * Whether libpocketsphinx can be called in-process here: the optional package koffi is installed
 * and the shared libraries load. Probed once per process.
 */
export function probeLibrary(): { ok: true } | { ok: false; why: string } {
  if (libraryProbe) return libraryProbe;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): unknown };
    koffi.load('libsphinxbase.so.3');
    koffi.load('libpocketsphinx.so.3');
    libraryProbe = { ok: true };
  } catch (e) {
    libraryProbe = { ok: false, why: e instanceof Error ? e.message.split('\n')[0]! : String(e) };
  }
  return libraryProbe;
}

/** The way a decoder configured with `mode` runs here ('auto': 'library' when it loads). */
export function decoderMode(mode: PocketsphinxOptions['mode'] = 'auto'): PocketsphinxMode {
  if (mode !== 'auto') return mode;
  return probeLibrary().ok ? 'library' : 'process';
}

/**
 * The mel filter bank for 8 kHz audio: 20 filters from 200 to 3500 Hz (the model's own: 25 from
 * 130 to 6800 Hz, which 8 kHz audio cannot carry). Chosen on the real-speech benchmark's
 * telephone-band commands (BENCHMARKS.md, "Directed recognition"): 51 % right against 32-44 %
 * with 25 filters over 130-3400/3500/3800 Hz or 20 from 300 Hz.
 */
export const NARROWBAND_FILTERBANK = { lowerf: 200, upperf: 3500, nfilt: 20 } as const;

/**
 * What an 8 kHz channel does to the wideband model's average cepstrum: the mean cepstrum of speech
 * through the telephone band (16 kHz -> 8 kHz -> 16 kHz, as src/voice/call-rate.ts gives a phone
 * call's audio to this recogniser) minus that of the same speech at 16 kHz, with the model's own
 * front end (25 mel filters, 130 to 6800 Hz): nothing above 4 kHz lowers the top filters' energy
 * and tilts the spectrum. Measured by `npm run bench -- telephone-mean` on Flite's four 16 kHz
 * voices, ten sentences each (synthetic speech: the shift is the channel's, and no real recording
 * the benchmarks score was used). c0, the level, is not shifted (measured -8.15): a caller's level
 * is their own and their line's gain, which the live mean learns, and with c0 shifted too the
 * decoder heard more words that were not said ("two seven two nine" for Flite's "seven two nine")
 * and no more real answers right (BENCHMARKS.md, "A phone call's first words on the telephone
 * band's cepstral mean"). Added to the model's -cmninit, it is where a phone call's first words
 * are normalised from (telephoneBandMean).
 */
export const TELEPHONE_BAND_CEPSTRAL_SHIFT: readonly number[] = [0, 27.41, -34.53, 29.46, -14.44, -3.3, 16.47, -21.05, 15.4, -4.65, -6.94, 14.23, -15.17];
/** The front end TELEPHONE_BAND_CEPSTRAL_SHIFT was measured with (the Debian model's feat.params). */
const SHIFT_FRONT_END = { lowerf: 130, upperf: 6800, nfilt: 25, ncep: 13 } as const;
/**
 * The weight a telephone-band call's starting mean has against the caller's frames as they are
 * added to it, in frames: 1 s of speech (the model's -cmninit counts as 5 s, sphinxbase
 * cmn_prior.c CMN_WIN). It is an estimate from synthetic speech, so the caller's own line soon
 * outweighs it, and the first utterance's second decode is mostly on the caller's mean. Against 5 s
 * with no second decode: no real 8 kHz sentence took a keyword edge (one of four did) and Flite's
 * first answers through the band were 108 of 115 right (102), for one real 8 kHz command and two
 * single digits fewer (BENCHMARKS.md, "A phone call's first words on the telephone band's cepstral
 * mean").
 */
const TELEPHONE_START_FRAMES = 100;

/**
 * The cepstral mean a telephone-band call starts on, from the model's feat.params: its -cmninit
 * plus TELEPHONE_BAND_CEPSTRAL_SHIFT; undefined for a model whose front end is not the one the
 * shift was measured with (or that states no -cmninit), which then starts on its own.
 *
 * Why: the live mean starts on -cmninit, the average of the model's training speech at 16 kHz,
 * and learns the caller's line as utterances end. A phone call's first answer was normalised as
 * if it carried 4-8 kHz, and heard worse than the same caller's later answers: single digits 63 %
 * against 80 % (BENCHMARKS.md, "A phone call's first words on the telephone band's cepstral mean").
 */
export function telephoneBandMean(featParams: string): number[] | undefined {
  const flag = (name: string): string | undefined => new RegExp(`^-${name}\\s+(\\S+)`, 'm').exec(featParams)?.[1];
  const sameFrontEnd = Number(flag('lowerf')) === SHIFT_FRONT_END.lowerf && Number(flag('upperf')) === SHIFT_FRONT_END.upperf && Number(flag('nfilt')) === SHIFT_FRONT_END.nfilt;
  const init = flag('cmninit')?.split(',').map(Number);
  if (!sameFrontEnd || !init || init.length !== SHIFT_FRONT_END.ncep || init.some((v) => !Number.isFinite(v))) return undefined;
  return init.map((v, i) => v + TELEPHONE_BAND_CEPSTRAL_SHIFT[i]!);
}

/** Feature-parameter files written, by model and flags: once per process, removed when it exits. */
const featParamsFiles = new Map<string, string>();

/**
 * The model's feat.params with `flags` in place of its own, for -featparams: the model's file
 * overrides the command line, so a decoder that needs other front-end values gets a file of its
 * own. 8 kHz audio decoded natively gets a filter bank that fits the band (NARROWBAND_FILTERBANK);
 * a telephone-band call in process mode, a process per utterance, its starting mean as -cmninit
 * (telephoneBandMean). Written once per process in a private temporary directory, as
 * vocabulary.ts writes its dictionary.
 */
function featParamsWith(modelDir: string, flags: Readonly<Record<string, string | number>>): string {
  const key = JSON.stringify([modelDir, flags]);
  const known = featParamsFiles.get(key);
  if (known) return known;
  const replaced = new Set(Object.keys(flags).map((k) => `-${k}`));
  const own = readFileSync(join(modelDir, 'en-us', 'feat.params'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !replaced.has(l.split(/\s+/)[0]!));
  const dir = mkdtempSync(join(tmpdir(), 'pocketsphinx-feat-'));
  // The decoders read it when they load, for as long as the process runs; gone with the process.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'feat.params');
  writeFileSync(file, [...own, ...Object.entries(flags).map(([k, v]) => `-${k} ${v}`), ''].join('\n'));
  featParamsFiles.set(key, file);
  return file;
}

/** The Debian model (pocketsphinx-en-us) is US English; PocketSphinx recognises one model's language. */
const LANGUAGES: readonly string[] = ['en-US'];

/**
 * What the recogniser can do with its decoder running in `mode`: both modes decode while the
 * audio arrives; only the library gives interim hypotheses and takes expected phrases (bias()).
 */
export function pocketsphinxCapabilities(mode: PocketsphinxMode): SttCapabilities {
  return {
    streaming: true,
    interimResults: mode === 'library',
    biasing: mode === 'library' ? 'runtime' : 'none',
    languages: LANGUAGES,
    inputSampleRates: [8_000, 16_000],
    // Its narrowband decoder (-samprate 8000) heard the real-speech set's telephone-band commands and
    // digits far worse than the wideband model given the same audio upsampled (BENCHMARKS.md, "The
    // telephone band end to end"): phone calls give it an upsampled copy (src/voice/call-rate.ts).
    telephoneRate: 16_000,
    // BENCHMARKS.md, "Recognition": the wideband model hears 8 kHz audio far worse.
    telephoneBand: 'poor',
    telephoneBandAdvice: 'wideband model: telephone-band callers (phone lines, hands-free Bluetooth) are heard badly, use STT_PROVIDER=deepgram or openai for them',
  };
}

/** Finds an executable on PATH (or checks a path); undefined when absent. */
export function findExecutable(name: string, pathEnv = process.env['PATH'] ?? ''): string | undefined {
  const candidates = name.includes('/') ? [name] : pathEnv.split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

/**
 * Embedded recognition with CMU PocketSphinx (Debian `pocketsphinx` + `pocketsphinx-en-us`).
 *
 * One decoder process per utterance, with one process always loaded ahead ("warm spare"): model
 * loading takes ~0.6 s, so the next utterance's process loads while the current one is spoken.
 * `finalize()` closes the process's stdin; pocketsphinx then decodes the tail and exits, printing
 * the hypothesis ~90 ms after the last audio (measured), instead of waiting ~0.6 s for its own
 * end-of-speech detection. Exit is an unambiguous end-of-utterance signal, so utterance and text
 * never get out of step. Cost: ~105 MB and ~0.5 s CPU per loaded process. A stream's close()
 * kills every process it started, those still finishing an utterance included, and waits for
 * them to be reaped: none outlives its call (or keeps a stopping server alive).
 *
 * Node's spawn gives children a socketpair, from which pocketsphinx cannot open /dev/stdin,
 * hence `sh -c 'cat | exec pocketsphinx_continuous -infile /dev/stdin ...'` (see Decoder).
 */
export class PocketsphinxStt implements SttProvider {
  readonly id = 'pocketsphinx';
  readonly #binary: string;
  readonly #modelDir: string;
  readonly #extraArgs: readonly string[];
  readonly #maxUtteranceMs: number;
  readonly #mode: 'auto' | 'library' | 'process';
  readonly #interimEveryMs: number;
  readonly #progressEveryMs: number;
  readonly #redecodeFirstUtterance: boolean;
  readonly #useTelephoneBandMean: boolean;
  /** The telephone band's starting mean (telephoneBandMean), read once: null where the model has none. */
  #telephoneMean: number[] | null | undefined;
  /** Where library-mode streams get their decoders; closed with the provider when its own. */
  readonly #decoders: DecoderPool;
  readonly #ownsDecoders: boolean;

  constructor(options: PocketsphinxOptions = {}) {
    this.#binary = options.binary ?? 'pocketsphinx_continuous';
    this.#modelDir = options.modelDir ?? DEBIAN_MODEL_DIR;
    this.#extraArgs = options.extraArgs ?? [];
    this.#maxUtteranceMs = options.maxUtteranceMs ?? 30_000;
    this.#mode = options.mode ?? 'auto';
    this.#interimEveryMs = options.interimEveryMs ?? 200;
    this.#progressEveryMs = options.progressEveryMs ?? 0;
    this.#redecodeFirstUtterance = options.redecodeFirstUtterance ?? true;
    this.#useTelephoneBandMean = options.telephoneBandMean ?? true;
    this.#decoders = options.decoders ?? new DecoderPool(options.pool);
    this.#ownsDecoders = !options.decoders;
  }

  /**
   * Loads the pool's warm decoders (16 kHz) ahead of the first call, in library mode when the
   * model is there; otherwise nothing (the first call reports what is missing).
   */
  warm(): void {
    if (this.mode() !== 'library' || !probeLibrary().ok || this.missingModel()) return;
    this.#decoders.warm(this.#workerData(16_000));
  }

  /** Streams open and the most the pool takes (library mode; process mode has no such bound). */
  capacity(): { open: number; max: number } | undefined {
    return this.mode() === 'library' ? { open: this.#decoders.streams, max: this.#decoders.maxStreams } : undefined;
  }

  /** Frees the decoders of the provider's own pool (streams still holding one fail); idempotent. */
  async close(): Promise<void> {
    if (this.#ownsDecoders) await this.#decoders.close();
  }

  /**
   * A decoder's set-up. Its dictionary is the language model's words only (vocabulary.ts: 12 MB
   * less per decoder), a grammar's other words looked up in the full one, unless extraArgs gives
   * a dictionary or language model of its own.
   */
  #workerData(rate: 8000 | 16000): DecoderWorkerData {
    const common = { interimEverySamples: (this.#interimEveryMs * rate) / 1000, rateHz: rate, progressEverySamples: (this.#progressEveryMs * rate) / 1000, redecodeFirstUtterance: this.#redecodeFirstUtterance };
    if (this.#extraArgs.includes('-dict') || this.#extraArgs.includes('-lm')) return { args: this.#decoderArgs(rate), ...common };
    const full = join(this.#modelDir, 'cmudict-en-us.dict');
    return { args: this.#decoderArgs(rate, languageModelDictionary(join(this.#modelDir, 'en-us.lm.bin'), full)), fullDictionary: full, ...common };
  }

  /** The way streams opened now run their decoder. */
  mode(): PocketsphinxMode {
    return decoderMode(this.#mode);
  }

  /** What streams opened now can do: interim results and bias() in library mode only. */
  get capabilities(): SttCapabilities {
    return pocketsphinxCapabilities(this.mode());
  }

  /**
   * The decoder's arguments. `-fwdflat no`: the second (flat-lexicon) pass runs at the end of the
   * utterance, on the latency path, and on this model it made recognition worse, not better
   * (BENCHMARKS.md, "Recognition": word error rate 24 % -> 11 % on slt and 16 % -> 7 % on kal16
   * without it, and the end of the utterance 2-3 times faster). extraArgs may override it (or any
   * other of ours: a flag of extraArgs replaces ours).
   * `dict`: the pronouncing dictionary, default the model's full cmudict-en-us.dict (library mode
   * gives the language model's words only: vocabulary.ts).
   */
  #decoderArgs(rateHz: 8000 | 16000, dict?: string): string[] {
    const m = this.#modelDir;
    const narrowband = rateHz === 8000 ? ['-samprate', '8000', '-nfft', '256', '-featparams', featParamsWith(m, NARROWBAND_FILTERBANK)] : [];
    const ours = ['-hmm', join(m, 'en-us'), '-lm', join(m, 'en-us.lm.bin'), '-dict', dict ?? join(m, 'cmudict-en-us.dict'), '-fwdflat', 'no', '-logfn', '/dev/null', ...narrowband];
    // The decoder refuses a flag given twice: one of extraArgs replaces ours.
    const overridden = new Set(this.#extraArgs.filter((a, i) => i % 2 === 0));
    return [...ours.filter((_, i) => !overridden.has(ours[i - (i % 2)]!)), ...this.#extraArgs];
  }

  /**
   * The mean a stream opened with `options` starts on: the telephone band's for a telephone-band
   * call given a 16 kHz copy (telephoneBandMean), where the model is the one whose feat.params we
   * read (extraArgs gives no -hmm or -featparams of its own); else undefined, the model's own.
   */
  #startingMean(rate: number, options: SttOpenOptions): number[] | undefined {
    if (!this.#useTelephoneBandMean || rate !== 16_000 || options.sourceSampleRateHz !== 8000) return undefined;
    if (this.#extraArgs.includes('-hmm') || this.#extraArgs.includes('-featparams')) return undefined;
    if (this.#telephoneMean === undefined) {
      try {
        this.#telephoneMean = telephoneBandMean(readFileSync(join(this.#modelDir, 'en-us', 'feat.params'), 'utf8')) ?? null;
      } catch {
        this.#telephoneMean = null;
      }
    }
    return this.#telephoneMean ?? undefined;
  }

  /** A model file the decoder needs that is missing, or undefined. */
  missingModel(): string | undefined {
    const m = this.#modelDir;
    return [join(m, 'en-us'), join(m, 'en-us.lm.bin'), join(m, 'cmudict-en-us.dict')].find((f) => !existsSync(f));
  }

  languages(): readonly string[] {
    return LANGUAGES;
  }

  /** Resolved binary path, or undefined when pocketsphinx_continuous is not installed. */
  binaryPath(): string | undefined {
    return findExecutable(this.#binary);
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    options.signal?.throwIfAborted();
    const rate = options.sampleRateHz ?? 16_000;
    if (rate !== 8000 && rate !== 16_000) throw new ProviderError('asr', 'pocketsphinx', `sample rate ${String(rate)} Hz is not decoded (8000 or 16000)`);
    if (this.mode() === 'library') {
      const probe = probeLibrary();
      if (!probe.ok) throw new ProviderError('asr', 'pocketsphinx', `libpocketsphinx cannot be loaded (${probe.why}): apt-get install pocketsphinx, npm install koffi`);
      const missing = this.missingModel();
      if (missing) throw new ProviderError('asr', 'pocketsphinx', `model file ${missing} not found (apt-get install pocketsphinx pocketsphinx-en-us)`);
      const leave = this.#decoders.admit();
      const data = this.#workerData(rate);
      this.#decoders.prepare(data);
      const mean = this.#startingMean(rate, options);
      const start = mean ? { mean, sum: mean.map((v) => v * TELEPHONE_START_FRAMES), nframe: TELEPHONE_START_FRAMES } : undefined;
      return new LibraryStream(this.#decoders, data, leave, rate, (this.#maxUtteranceMs * rate) / 1000, options.onInterim, options.keywords ?? [], start);
    }
    const bin = this.binaryPath();
    if (!bin) {
      throw new ProviderError('asr', 'pocketsphinx', `${this.#binary} not found (apt-get install pocketsphinx pocketsphinx-en-us)`);
    }
    const mean = this.#startingMean(rate, options);
    const args = [bin, '-infile', '/dev/stdin', ...this.#decoderArgs(rate), ...(mean ? ['-featparams', featParamsWith(this.#modelDir, { cmninit: mean.map((v) => v.toFixed(2)).join(',') })] : [])];
    return new PocketsphinxStream(() => new Decoder(args), (this.#maxUtteranceMs * rate) / 1000);
  }
}

/** Audio a decoder's stdin may hold unsent before more is dropped: 10 s (a decoder far behind real time). */
const MAX_PENDING_STDIN_BYTES = 320_000;
/** How long close() waits for killed decoders to be reaped, ms. */
const REAP_WAIT_MS = 2_000;

/** After kill()'s SIGTERM, how long the processes have before the group gets SIGKILL, ms. */
const KILL_GRACE_MS = 1_000;

/**
 * One pocketsphinx process = one utterance. The shell, cat and the decoder run in a process group
 * of their own, and kill() signals the group: killing only the shell (as before) left cat and the
 * decoder running, decoding audio nobody waited for and holding the server's event loop open. The
 * shell catches SIGTERM, and POSIX runs a trap only once the foreground pipeline has ended, so one
 * SIGTERM to the group ends cat and the decoder while the shell stays to reap them: nothing is
 * orphaned, and no zombies pile up in containers whose init does not reap. SIGKILL follows if the
 * group is still there after KILL_GRACE_MS.
 */
class Decoder {
  readonly #child: ChildProcess;
  readonly done: Promise<string>;
  /** Resolves once the process has exited and its pipes are closed. */
  readonly closed: Promise<void>;
  samples = 0;
  /** Set by kill(): a signal exit we caused is an abandoned utterance, not a failure. */
  #killed = false;

  constructor(args: readonly string[]) {
    // "$@" keeps every argument a separate word: nothing is interpreted by the shell.
    this.#child = spawn('sh', ['-c', 'trap : TERM; cat | exec "$@"', 'sh', ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    this.#child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    this.#child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      if (err.length < 2000) err += d;
    });
    // Writes after the process died (e.g. missing model) must not crash the server.
    this.#child.stdin?.on('error', () => {});
    this.closed = new Promise((resolve) => {
      this.#child.once('close', () => resolve());
      this.#child.once('error', () => resolve());
    });
    this.done = new Promise((resolve, reject) => {
      this.#child.on('error', (e) => reject(new ProviderError('asr', 'pocketsphinx', 'could not start decoder', { cause: e })));
      this.#child.on('close', (code, signal) => {
        if (this.#killed) {
          resolve('');
        } else if (code === 0) {
          resolve(out.split('\n').map((l) => l.trim()).filter(Boolean).join(' '));
        } else if (signal) {
          // Killed by someone else (OOM killer, an operator): the recogniser died mid-call.
          reject(new ProviderError('asr', 'pocketsphinx', `decoder was killed (${signal})`));
        } else {
          const hint = /FATAL|Failed|not found/i.exec(err) ? ` (${firstLine(err)})` : '';
          reject(new ProviderError('asr', 'pocketsphinx', `decoder exited with ${code}${hint}`));
        }
      });
    });
    // Callers await `done` only for utterances they finalize; a spare that fails is reported then.
    this.done.catch(() => {});
  }

  write(pcm: Int16Array): void {
    const stdin = this.#child.stdin;
    if (!stdin || stdin.writableLength > MAX_PENDING_STDIN_BYTES) return; // far behind: drop, do not grow memory
    this.samples += pcm.length;
    stdin.write(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  end(): void {
    this.#child.stdin?.end();
  }

  /** Ends cat and the decoder, then the shell (the whole process group); idempotent. */
  kill(): void {
    if (this.#killed) return;
    this.#killed = true;
    this.#child.stdin?.destroy();
    if (!this.#signalGroup('SIGTERM')) return;
    const force = setTimeout(() => this.#signalGroup('SIGKILL'), KILL_GRACE_MS);
    force.unref();
    void this.closed.then(() => clearTimeout(force));
  }

  /** False when the shell has exited already (its group is gone with it). */
  #signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.#child.pid;
    if (pid === undefined || this.#child.exitCode !== null || this.#child.signalCode !== null) return false;
    try {
      process.kill(-pid, signal);
    } catch {
      this.#child.kill(signal); // no group (yet): at least the shell
    }
    return true;
  }
}

function firstLine(s: string): string {
  return (s.split('\n').find((l) => /FATAL|Failed|not found/i.test(l)) ?? '').slice(0, 200);
}

class PocketsphinxStream implements SttStream {
  readonly #make: () => Decoder;
  readonly #maxSamples: number;
  /** Every decoder process of this stream still running: the spare, the current one, those finishing. */
  readonly #live = new Set<Decoder>();
  /** Aborted by close(): pending finalizes reject with its reason. */
  readonly #closing = new AbortController();
  #current: Decoder | undefined;
  #spare: Decoder | undefined;
  #closed = false;
  /** Utterances cut at maxUtteranceMs whose text is prepended to the next finalize. */
  #carried: Array<Promise<string>> = [];

  constructor(make: () => Decoder, maxSamples: number) {
    this.#make = make;
    this.#maxSamples = maxSamples;
    this.#spare = this.#spawn();
  }

  #spawn(): Decoder {
    const d = this.#make();
    this.#live.add(d);
    void d.closed.then(() => this.#live.delete(d));
    return d;
  }

  #take(): Decoder {
    if (!this.#current) {
      this.#current = this.#spare ?? this.#spawn();
      this.#spare = undefined;
    }
    return this.#current;
  }

  write(pcm: Int16Array): void {
    if (this.#closed) return;
    const d = this.#take();
    d.write(pcm);
    if (d.samples >= this.#maxSamples) {
      // Bounded work per process: cut here, keep the text for the utterance's finalize().
      this.#carried.push(this.#rotate());
    }
  }

  #rotate(): Promise<string> {
    const d = this.#take();
    this.#current = undefined;
    d.end();
    // Load the next decoder only once this one has finished: loading competes for CPU with the
    // tail decode, which is on the latency path (measured 270-330 ms vs ~90 ms).
    const refill = (): void => {
      if (!this.#closed && !this.#spare && !this.#current) this.#spare = this.#spawn();
    };
    d.done.then(refill, refill);
    return d.done;
  }

  async finalize(signal?: AbortSignal): Promise<SttResult> {
    if (this.#closed) throw new ProviderError('asr', 'pocketsphinx', 'stream closed');
    signal?.throwIfAborted();
    const parts = [...this.#carried.splice(0)];
    if (this.#current) parts.push(this.#rotate());
    if (parts.length === 0) return { text: '' };
    const stop = signal ? AbortSignal.any([signal, this.#closing.signal]) : this.#closing.signal;
    const texts = await abortable(Promise.all(parts), stop);
    return { text: texts.filter(Boolean).join(' ') };
  }

  /** Idempotent: pending finalizes reject, every decoder process is killed and reaped. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#closing.abort(new ProviderError('asr', 'pocketsphinx', 'stream closed'));
      for (const d of this.#live) d.kill();
      this.#current = this.#spare = undefined;
      this.#carried = [];
    }
    if (this.#live.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...this.#live].map((d) => d.closed)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, REAP_WAIT_MS).unref())),
    ]);
    clearTimeout(timer);
  }
}

/** A finalize() waiting for its utterance's text from the decoder thread. */
interface Pending {
  resolve: (r: SttResult) => void;
  reject: (e: unknown) => void;
  /** Given up by its signal: the answer, when it comes, is discarded. */
  settled: boolean;
  cleanup: () => void;
}

/** Audio posted to a decoder thread (or queued for one) and not yet decoded before more is dropped: 10 s. */
const MAX_QUEUED_SAMPLES = 160_000;

/**
 * Library mode: a call's utterances decoded by the pool's shared decoders (decoder-pool.ts). The
 * stream leases a decoder when an utterance's audio starts, feeds it each chunk as it arrives (so
 * at finalize() only the last frames and the final passes remain), and gives it back once no
 * utterance of its own is left there. Each utterance starts with what the call expects now (bias,
 * grammar); the thread handles messages in order, so each finalize() gets its own utterance's
 * answer, in the order asked.
 */
class LibraryStream implements SttStream {
  readonly #decoders: DecoderPool;
  readonly #data: DecoderWorkerData;
  /** Gives the stream's place in the pool back (DecoderPool.admit). */
  readonly #leave: () => void;
  readonly #rateHz: number;
  readonly #maxSamples: number;
  readonly #onInterim: ((i: SttInterim) => void) | undefined;
  readonly #pending = new Map<number, Pending>();
  /** The decoder held while an utterance of this stream is on it. */
  #lease: Lease | undefined;
  #nextId = 0;
  #samples = 0;
  /** Samples of the utterance being written, over its parts cut at maxSamples (where each part's word times start). */
  #utteranceSamples = 0;
  /** Samples posted under the current lease, and decoded by it as last reported. */
  #posted = 0;
  #decoded = 0;
  /** Utterances cut at maxSamples whose text is prepended to the next finalize's. */
  #carried: Array<Promise<SttResult>> = [];
  #failure: ProviderError | undefined;
  #closed = false;
  /** SttOpenOptions.keywords: under every bias(). */
  readonly #keywords: readonly string[];
  /** What the next utterance is told when it begins (bias(), expect()). */
  #bias: string[];
  #expectation: SttExpectation | undefined;
  /**
   * The call's cepstral mean as its last utterance left it, for the decoder of its next; before
   * the first, the one it starts on where it is not the model's (a telephone-band call's).
   */
  #cmn: CmnState | undefined;
  /** The mean the call starts on where it is not the model's; #cmn until its first utterance ends. */
  readonly #start: CmnState | undefined;

  constructor(decoders: DecoderPool, data: DecoderWorkerData, leave: () => void, rateHz: number, maxSamples: number, onInterim: ((i: SttInterim) => void) | undefined, keywords: readonly string[], start: CmnState | undefined) {
    this.#decoders = decoders;
    this.#data = data;
    this.#leave = leave;
    this.#rateHz = rateHz;
    this.#maxSamples = maxSamples;
    this.#onInterim = onInterim;
    this.#keywords = keywords;
    this.#bias = [...keywords];
    this.#cmn = this.#start = start;
  }

  #onMessage(m: DecoderOut): void {
    if (m.type === 'progress') {
      this.#decoded = m.samples;
    } else if (m.type === 'interim') {
      // Interims still on their way when finalize() was called belong to a finished utterance.
      if (this.#pending.size === 0 && this.#samples > 0 && !this.#closed) this.#onInterim?.({ text: m.text });
    } else if (m.type === 'final') {
      const p = this.#pending.get(m.id);
      this.#pending.delete(m.id);
      if (p && !p.settled) {
        p.settled = true;
        p.cleanup();
        p.resolve(m.words ? { text: m.text, words: m.words } : { text: m.text });
      }
      if (m.cmn) this.#cmn = m.cmn;
      this.#giveBack();
    }
  }

  /** Once no utterance of this stream is on the decoder (none pending, none being written), another call may have it. */
  #giveBack(): void {
    if (this.#lease && this.#pending.size === 0 && this.#samples === 0) {
      this.#lease.release();
      this.#lease = undefined;
    }
  }

  #fail(error: ProviderError): void {
    this.#lease = undefined;
    if (this.#closed) return;
    this.#failure ??= error;
    this.#rejectAll(this.#failure);
  }

  #rejectAll(error: unknown): void {
    for (const p of this.#pending.values()) {
      if (p.settled) continue;
      p.settled = true;
      p.cleanup();
      p.reject(error);
    }
    this.#pending.clear();
  }

  /** Audio written and not reported decoded yet (queued for a decoder included), ms. */
  pendingMs(): number {
    return this.#lease ? ((this.#posted - this.#decoded) / this.#rateHz) * 1000 : 0;
  }

  write(pcm: Int16Array): void {
    if (this.#closed || this.#failure) return;
    // A decoder far behind real time (an overloaded machine): drop audio rather than grow memory.
    if (this.#lease && this.#posted - this.#decoded > MAX_QUEUED_SAMPLES) return;
    if (!this.#lease) {
      this.#lease = this.#decoders.lease(this.#data, { message: (m) => this.#onMessage(m), failed: (e) => this.#fail(e) });
      this.#posted = this.#decoded = 0;
    }
    if (this.#samples === 0) {
      const expectation = this.#expectation;
      const cmn = this.#cmn;
      const start = cmn !== undefined && cmn === this.#start;
      this.#lease.post({ type: 'begin', lease: this.#lease.id, bias: this.#bias, ...(expectation ? { expectation } : {}), ...(cmn ? { cmn } : {}), ...(start ? { start } : {}) });
    }
    this.#posted += pcm.length;
    const copy = pcm.slice();
    this.#lease.post({ type: 'audio', pcm: copy }, [copy.buffer]);
    this.#samples += pcm.length;
    this.#utteranceSamples += pcm.length;
    // Bounded work per utterance: cut here, keep the text for the utterance's finalize().
    if (this.#samples >= this.#maxSamples) {
      const cut = this.#end(undefined);
      cut.catch(() => {}); // reported by the utterance's finalize()
      this.#carried.push(cut);
    }
  }

  #end(signal: AbortSignal | undefined): Promise<SttResult> {
    // No audio since the last answer: nothing is on a decoder, and nothing was said.
    if (!this.#lease) return Promise.resolve({ text: '' });
    const lease = this.#lease;
    const id = this.#nextId++;
    // The decoder times this part's words from its own first sample.
    const partMs = ((this.#utteranceSamples - this.#samples) / this.#rateHz) * 1000;
    this.#samples = 0;
    const answer = new Promise<SttResult>((resolve, reject) => {
      const onAbort = (): void => {
        if (p.settled) return;
        p.settled = true;
        p.cleanup();
        reject(signal?.reason);
      };
      const p: Pending = { resolve, reject, settled: false, cleanup: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, p);
    });
    lease.post({ type: 'end', id });
    return partMs === 0 ? answer : answer.then((r) => (r.words ? { text: r.text, words: r.words.map((w) => ({ word: w.word, startMs: partMs + w.startMs, endMs: partMs + w.endMs })) } : r));
  }

  /**
   * Expected phrases, from the next utterance on: when an utterance's text has none of them, the
   * decoder looks them up in the utterance's word lattice and puts one probable enough in place of
   * the words heard there (decoder.worker.ts, withExpectedPhrase).
   */
  bias(phrases: readonly string[]): void {
    if (this.#closed || this.#failure) return;
    this.#bias = [...new Set([...phrases, ...this.#keywords])];
    this.#expectation = undefined;
  }

  /**
   * Directed recognition, from the next utterance on: while the expectation is closed, each
   * utterance is also decoded with a grammar of the expected answers, taken only when the open
   * language model's lattice supports it (decoder.worker.ts, directedText); open expectations
   * bias the language model as bias() does. The call's keywords stay under the bias, not in
   * the grammar (they were what the call expected first, not what this node expects).
   */
  expect(expectation: SttExpectation): void {
    if (this.#closed || this.#failure) return;
    this.#bias = [...new Set([...expectation.phrases, ...this.#keywords])];
    const count = expectation.digitCount;
    this.#expectation = { closed: expectation.closed, values: [...expectation.values], phrases: [...expectation.phrases], ...(count ? { digitCount: { min: count.min, max: count.max } } : {}) };
  }

  async finalize(signal?: AbortSignal): Promise<SttResult> {
    if (this.#closed) throw new ProviderError('asr', 'pocketsphinx', 'stream closed');
    if (this.#failure) throw this.#failure;
    signal?.throwIfAborted();
    const parts = [...this.#carried.splice(0), this.#end(signal)];
    this.#utteranceSamples = 0;
    const results = await Promise.all(parts);
    const text = results.map((r) => r.text).filter(Boolean).join(' ');
    // Word times only when every part has them: a part without would leave words out of the text.
    const spoken = results.filter((r) => r.text);
    const words = spoken.length > 0 && spoken.every((r) => r.words) ? spoken.flatMap((r) => r.words!) : undefined;
    return words ? { text, words } : { text };
  }

  /** Idempotent: pending finalizes reject; the decoder held, if any, goes back to the pool reset. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#rejectAll(new ProviderError('asr', 'pocketsphinx', 'stream closed'));
    this.#closed = true;
    this.#carried = [];
    this.#lease?.release();
    this.#lease = undefined;
    this.#leave();
  }
}
