import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { trimNativeHeap } from '../../lib/native-heap.ts';
import { ProviderError } from '../errors.ts';
import type { DecoderIn, DecoderOut, DecoderThreadData, DecoderWorkerData } from './decoder.worker.ts';

/**
 * Decoders loaded at most per core, by default. Decoding is CPU-bound once calls fall behind, and
 * decoders beyond the cores only share them: on 2 cores, 8 callers speaking every few seconds were
 * answered at e2e p90 0.9-1.1 s with 3 decoders, 1.3-1.8 s with 4 and 2.7-3.7 s with 6, and each
 * decoder held ~90 MB (BENCHMARKS.md, "How many decoders").
 */
export const DECODERS_PER_CORE = 1.5;

/** How long closing the pool waits for a decoder's thread to free the decoder and exit, ms. */
const WORKER_EXIT_WAIT_MS = 2_000;

export interface DecoderPoolOptions {
  /** Decoders loaded ahead by warm() and kept loaded while idle; default 0 (loaded on demand). */
  warm?: number;
  /**
   * Most decoders loaded at once (each ~90 MB with its thread); an utterance that finds all of
   * them busy waits, its audio queued, for the first to free. Default DECODERS_PER_CORE per core.
   */
  maxDecoders?: number;
  /** Most recognition streams (calls) open at once; openStream beyond is refused. Default 16 per core. */
  maxStreams?: number;
  /** How long a decoder beyond `warm` stays loaded once idle, ms; default 10 000. */
  idleMs?: number;
  /**
   * Gives the memory the freed decoders left in the malloc arenas back to the system, called once
   * the last of a batch of retired decoders' threads has exited; default trimNativeHeap (glibc's
   * malloc_trim(0), on a libuv thread, not the event loop).
   */
  trim?: () => Promise<unknown>;
}

/** What a lease's holder hears: the decoder's answers for its utterances, and its failure. */
export interface LeaseHandler {
  message(m: DecoderOut): void;
  /** The decoder's thread crashed or could not load: the holder's pending work is lost. */
  failed(error: ProviderError): void;
}

/** One decoder: a thread of decoder.worker.ts holding one loaded ps_decoder_t. */
class PooledDecoder {
  readonly key: string;
  readonly worker: Worker;
  readonly exited: Promise<void>;
  /**
   * Resolves once the thread has loaded its model or failed to, or has exited. A thread is not
   * terminated before: terminating one inside koffi's calls of its load aborts the whole process
   * (FATAL ERROR ... napi_throw).
   */
  readonly loaded: Promise<void>;
  lease: Lease | undefined;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set once it is closed on purpose (shrink, pool close): its exit is no crash. */
  retiring = false;

  /** The id of the last lease given back, shared with the thread (DecoderThreadData). */
  readonly #released = new Int32Array(new SharedArrayBuffer(4));

  constructor(key: string, data: DecoderWorkerData) {
    this.key = key;
    const thread: DecoderThreadData = { released: this.#released.buffer };
    this.worker = new Worker(new URL('./decoder.worker.ts', import.meta.url), { workerData: { ...data, ...thread } });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.loaded = new Promise((resolve) => {
      this.worker.on('message', (m: DecoderOut) => {
        if (m.type === 'ready' || m.type === 'failed') resolve();
      });
      void this.exited.then(resolve);
    });
  }

  /** Ends the thread abruptly once it is past its load (`loaded`). */
  async terminate(): Promise<void> {
    await this.loaded;
    await this.worker.terminate();
  }

  /** The holder `leaseId` let go: the thread skips the audio of it still queued. */
  released(leaseId: number): void {
    Atomics.store(this.#released, 0, leaseId);
  }

  post(m: DecoderIn, transfer?: ArrayBuffer[]): void {
    this.worker.postMessage(m, transfer);
  }
}

/**
 * A stream's hold on a decoder for its utterances: messages posted before a decoder is free wait
 * here (the stream bounds the audio it queues); answers are routed by lease id, so nothing said
 * to or by an earlier holder of the same decoder reaches this one.
 */
export class Lease {
  readonly id: number;
  readonly key: string;
  readonly handler: LeaseHandler;
  readonly #pool: DecoderPool;
  #decoder: PooledDecoder | undefined;
  #queued: Array<{ m: DecoderIn; transfer: ArrayBuffer[] | undefined }> = [];
  #released = false;

  constructor(pool: DecoderPool, id: number, key: string, handler: LeaseHandler) {
    this.#pool = pool;
    this.id = id;
    this.key = key;
    this.handler = handler;
  }

  /** Whether a decoder has been given to this lease (false while it waits for one). */
  get assigned(): boolean {
    return this.#decoder !== undefined;
  }

  post(m: DecoderIn, transfer?: ArrayBuffer[]): void {
    if (this.#released) return;
    if (this.#decoder) this.#decoder.post(m, transfer);
    else this.#queued.push({ m, transfer });
  }

  /** @internal The pool gives this lease its decoder: what waited is sent, in order. */
  assign(decoder: PooledDecoder): void {
    this.#decoder = decoder;
    for (const { m, transfer } of this.#queued.splice(0)) decoder.post(m, transfer);
  }

  /** @internal The pool took the decoder away (it crashed). */
  lost(): void {
    this.#decoder = undefined;
    this.#released = true;
  }

  /** Gives the decoder back (reset first: nothing of this holder's carries over); idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#queued = [];
    const decoder = this.#decoder;
    this.#decoder = undefined;
    this.#pool.returned(this, decoder);
  }
}

/**
 * The decoders of library-mode PocketSphinx streams, loaded once and shared by every call. A
 * decoder holds the whole model (~80 MB, ~90 with its thread: BENCHMARKS.md, "Memory per embedded call"), and this
 * PocketSphinx cannot share one model between decoders, so a call does not keep a decoder: each
 * utterance leases one when its audio starts and gives it back once its text is out, reset
 * (utterance ended, open language model searched, no bias or grammar). The number of decoders
 * follows the utterances being decoded at once, not the calls.
 *
 * Bounds: at most `maxStreams` streams open (openStream beyond is refused before the stream
 * exists, so a call is never cut off mid-way for want of a decoder); at most `maxDecoders`
 * decoders loaded, utterances beyond wait in order for one. `warm` decoders are loaded by warm()
 * and kept; others are freed `idleMs` after they fall idle. A decoder thread that crashes fails
 * only the stream holding it and is replaced (up to `warm`); terminateAll() crashes them all.
 * Idle threads do not keep the process alive.
 */
export class DecoderPool {
  readonly warmCount: number;
  readonly maxDecoders: number;
  readonly maxStreams: number;
  readonly #idleMs: number;
  readonly #trim: () => Promise<unknown>;
  readonly #decoders = new Set<PooledDecoder>();
  readonly #waiting: Lease[] = [];
  /** What each key's decoders are set up with, for replacements. */
  readonly #data = new Map<string, DecoderWorkerData>();
  #warmKey: string | undefined;
  #streams = 0;
  #nextLease = 1;
  #closed = false;

  constructor(options: DecoderPoolOptions = {}) {
    const cores = availableParallelism();
    this.warmCount = options.warm ?? 0;
    this.maxDecoders = Math.max(1, options.maxDecoders ?? Math.ceil(DECODERS_PER_CORE * cores), this.warmCount);
    this.maxStreams = options.maxStreams ?? 16 * cores;
    this.#idleMs = options.idleMs ?? 10_000;
    this.#trim = options.trim ?? trimNativeHeap;
  }

  /** Loads decoders set up with `data` until `warm` are loaded (at start, ahead of the first call). */
  warm(data: DecoderWorkerData): void {
    const key = keyOf(data);
    this.#data.set(key, data);
    this.#warmKey = key;
    while (!this.#closed && this.#decoders.size < this.warmCount) this.#idle(this.#spawn(key));
  }

  /**
   * A stream opens: refused with a retryable ProviderError when `maxStreams` are open. The
   * returned function closes it (idempotent).
   */
  admit(): () => void {
    if (this.#closed) throw new ProviderError('asr', 'pocketsphinx', 'the decoder pool is closed');
    if (this.#streams >= this.maxStreams) {
      throw new ProviderError('asr', 'pocketsphinx', `at capacity: ${this.maxStreams} embedded recognition streams are open (POCKETSPHINX_MAX_STREAMS)`, { retryable: true });
    }
    this.#streams++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#streams--;
    };
  }

  /**
   * A stream opened: unless a decoder set up with `data` is idle (or loading) already, one starts
   * loading now, under the cap, so the call's first utterance does not wait the ~0.5 s a model
   * takes to load (the call's greeting plays meanwhile).
   */
  prepare(data: DecoderWorkerData): void {
    const key = keyOf(data);
    this.#data.set(key, data);
    if (this.#closed || this.#loaded() >= this.maxDecoders) return;
    if ([...this.#decoders].some((d) => !d.lease && !d.retiring && d.key === key)) return;
    this.#idle(this.#spawn(key));
  }

  /** A decoder set up with `data` for one holder: an idle one, a new one, or the next to free. */
  lease(data: DecoderWorkerData, handler: LeaseHandler): Lease {
    const key = keyOf(data);
    this.#data.set(key, data);
    const lease = new Lease(this, this.#nextLease++, key, handler);
    if (this.#closed) {
      queueMicrotask(() => handler.failed(new ProviderError('asr', 'pocketsphinx', 'the decoder pool is closed')));
      return lease;
    }
    this.#waiting.push(lease);
    this.#dispatch();
    return lease;
  }

  /** @internal A lease gives its decoder back (or stops waiting for one). */
  returned(lease: Lease, decoder: PooledDecoder | undefined): void {
    const i = this.#waiting.indexOf(lease);
    if (i >= 0) this.#waiting.splice(i, 1);
    if (decoder && decoder.lease === lease) {
      decoder.released(lease.id);
      decoder.post({ type: 'reset' });
      decoder.lease = undefined;
      this.#idle(decoder);
    }
    this.#dispatch();
  }

  /** Hands idle decoders (or new ones, under the cap) to the leases waiting, in order. */
  #dispatch(): void {
    while (this.#waiting.length > 0 && !this.#closed) {
      const lease = this.#waiting[0]!;
      let decoder = [...this.#decoders].find((d) => !d.lease && !d.retiring && d.key === lease.key);
      if (!decoder && this.#loaded() >= this.maxDecoders) {
        // Full, but an idle decoder of another set-up (the other sample rate) can make room.
        const other = [...this.#decoders].find((d) => !d.lease && !d.retiring);
        if (!other) return;
        this.#retire(other);
      }
      decoder ??= this.#spawn(lease.key);
      this.#waiting.shift();
      clearTimeout(decoder.idleTimer);
      decoder.lease = lease;
      decoder.worker.ref();
      lease.assign(decoder);
    }
  }

  #loaded(): number {
    return [...this.#decoders].filter((d) => !d.retiring).length;
  }

  #spawn(key: string): PooledDecoder {
    const decoder = new PooledDecoder(key, this.#data.get(key)!);
    this.#decoders.add(decoder);
    decoder.worker.on('message', (m: DecoderOut) => {
      if (m.type === 'failed') this.#crashed(decoder, new ProviderError('asr', 'pocketsphinx', `decoder failed (${m.message})`));
      else if (decoder.lease && 'lease' in m && m.lease === decoder.lease.id) decoder.lease.handler.message(m);
    });
    decoder.worker.on('error', (e) => this.#crashed(decoder, new ProviderError('asr', 'pocketsphinx', 'decoder thread failed', { cause: e })));
    decoder.worker.once('exit', () => this.#crashed(decoder, new ProviderError('asr', 'pocketsphinx', 'decoder thread exited')));
    return decoder;
  }

  /** An idle decoder: does not hold the process open; freed after idleMs when beyond `warm`. */
  #idle(decoder: PooledDecoder): void {
    decoder.worker.unref();
    if (this.#loaded() <= this.warmCount && decoder.key === this.#warmKey) return;
    clearTimeout(decoder.idleTimer);
    decoder.idleTimer = setTimeout(() => {
      if (!decoder.lease && this.#loaded() > this.warmCount) this.#retire(decoder);
      else if (!decoder.lease && decoder.key !== this.#warmKey) this.#retire(decoder);
    }, this.#idleMs);
    decoder.idleTimer.unref();
  }

  /**
   * Frees an idle decoder: its thread frees the model (ps_free) and exits. It is never terminated
   * for being slow to (a terminated thread's model is never freed: ~90 MB kept until the process
   * ends); only when the pool closes, after WORKER_EXIT_WAIT_MS.
   */
  #retire(decoder: PooledDecoder): void {
    decoder.retiring = true;
    clearTimeout(decoder.idleTimer);
    // Held open until it has exited: whoever awaits close() is not left with an empty event loop.
    decoder.worker.ref();
    decoder.post({ type: 'close' });
    if (this.#closed) this.#forceExit(decoder);
  }

  #forceExit(decoder: PooledDecoder): void {
    // Counted from the end of its load: a thread still loading takes the close once loaded.
    void decoder.loaded.then(() => {
      const force = setTimeout(() => void decoder.worker.terminate(), WORKER_EXIT_WAIT_MS);
      force.unref();
      void decoder.exited.then(() => clearTimeout(force));
    });
  }

  /**
   * A retired decoder's thread exited, its model freed: once no other is still exiting, the freed
   * memory goes back to the system. glibc keeps what a thread freed in that thread's arena, and the
   * arena outlives the thread (measured: BENCHMARKS.md, "Memory after the calls").
   */
  #freed(): void {
    if ([...this.#decoders].some((d) => d.retiring)) return;
    this.#trim().catch(() => {
      // Trimming only returns memory early; where it fails nothing is lost.
    });
  }

  /** A decoder died (or exited as retired): its holder fails; it is replaced while fewer than `warm` are loaded. */
  #crashed(decoder: PooledDecoder, error: ProviderError): void {
    if (!this.#decoders.has(decoder)) return;
    this.#decoders.delete(decoder);
    clearTimeout(decoder.idleTimer);
    const lease = decoder.lease;
    decoder.lease = undefined;
    if (!decoder.retiring) void decoder.terminate();
    else this.#freed();
    if (lease) {
      lease.lost();
      lease.handler.failed(error);
    }
    if (this.#closed) return;
    if (this.#warmKey && this.#loaded() < this.warmCount) this.#idle(this.#spawn(this.#warmKey));
    this.#dispatch();
  }

  /** Decoders loaded (or loading), idle or leased. */
  get size(): number {
    return this.#loaded();
  }

  /** Decoders held by a stream's utterance now. */
  get leased(): number {
    return [...this.#decoders].filter((d) => d.lease).length;
  }

  /** The decoder threads, oldest first, and whether a stream holds each (for diagnostics). */
  get threads(): ReadonlyArray<{ worker: Worker; leased: boolean; terminate: () => Promise<void> }> {
    return [...this.#decoders].filter((d) => !d.retiring).map((d) => ({ worker: d.worker, leased: d.lease !== undefined, terminate: () => d.terminate() }));
  }

  /** Streams open (admitted and not closed). */
  get streams(): number {
    return this.#streams;
  }

  /** Ends every decoder thread abruptly, as a crash would: the streams holding one fail. */
  async terminateAll(): Promise<void> {
    const all = [...this.#decoders];
    await Promise.all(all.map((d) => d.terminate()));
    await Promise.all(all.map((d) => d.exited));
  }

  /** Frees every decoder and refuses new streams; idempotent. Streams holding a decoder fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#decoders];
    for (const lease of this.#waiting.splice(0)) lease.handler.failed(new ProviderError('asr', 'pocketsphinx', 'the decoder pool is closed'));
    for (const d of all) {
      if (d.lease) this.#crashed(d, new ProviderError('asr', 'pocketsphinx', 'the decoder pool is closed'));
      else if (!d.retiring) this.#retire(d);
      else this.#forceExit(d);
    }
    await Promise.all(all.map((d) => d.exited));
  }
}

function keyOf(data: DecoderWorkerData): string {
  return JSON.stringify(data);
}
