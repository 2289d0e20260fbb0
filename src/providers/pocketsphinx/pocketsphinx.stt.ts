import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { SttOpenOptions, SttProvider, SttResult, SttStream } from '../stt.ts';
import { ProviderError } from '../errors.ts';

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
  readonly #maxUtteranceSamples: number;

  constructor(options: PocketsphinxOptions = {}) {
    this.#binary = options.binary ?? 'pocketsphinx_continuous';
    this.#modelDir = options.modelDir ?? DEBIAN_MODEL_DIR;
    this.#extraArgs = options.extraArgs ?? [];
    this.#maxUtteranceSamples = ((options.maxUtteranceMs ?? 30_000) * 16000) / 1000;
  }

  /** The Debian model (pocketsphinx-en-us) is US English; PocketSphinx recognises one model's language. */
  languages(): readonly string[] {
    return ['en-US'];
  }

  /** Resolved binary path, or undefined when pocketsphinx_continuous is not installed. */
  binaryPath(): string | undefined {
    return findExecutable(this.#binary);
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    options.signal?.throwIfAborted();
    const bin = this.binaryPath();
    if (!bin) {
      throw new ProviderError('asr', 'pocketsphinx', `${this.#binary} not found (apt-get install pocketsphinx pocketsphinx-en-us)`);
    }
    const m = this.#modelDir;
    const args = [
      bin, '-infile', '/dev/stdin',
      '-hmm', join(m, 'en-us'), '-lm', join(m, 'en-us.lm.bin'), '-dict', join(m, 'cmudict-en-us.dict'),
      '-logfn', '/dev/null',
      ...this.#extraArgs,
    ];
    return new PocketsphinxStream(() => new Decoder(args), this.#maxUtteranceSamples);
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
    const texts = await raceAbort(Promise.all(parts), stop);
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

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
