import { Worker } from 'node:worker_threads';
import type { DecoderIn, DecoderWorkerData } from './decoder.worker.ts';

/** How long release() waits for a decoder thread to free its decoder and exit, ms. */
const WORKER_EXIT_WAIT_MS = 2_000;

/**
 * The decoder threads of library-mode PocketSphinx streams (decoder.worker.ts): where a stream gets
 * its thread and gives it back. Today each stream gets a thread of its own, which loads its model
 * when acquired and exits when released; the pool knows the threads still running, so it can say
 * how many there are and end them all. Reusing loaded decoders across calls would change
 * acquire() and release() only.
 */
export class DecoderPool {
  /** The threads running, each with a promise settled when it exits. */
  readonly #threads = new Map<Worker, Promise<void>>();

  /** A decoder thread for one stream, its decoder set up with `data`. */
  acquire(data: DecoderWorkerData): Worker {
    const worker = new Worker(new URL('./decoder.worker.ts', import.meta.url), { workerData: data });
    const exited = new Promise<void>((resolve) => {
      worker.once('exit', () => {
        this.#threads.delete(worker);
        resolve();
      });
    });
    this.#threads.set(worker, exited);
    return worker;
  }

  /**
   * Gives back a stream's thread, once: it frees its decoder and exits, and is terminated if it
   * has not within 2 s. Resolves once it is gone (at once for a thread that has exited already).
   */
  release(worker: Worker): Promise<void> {
    const exited = this.#threads.get(worker);
    if (!exited) return Promise.resolve();
    worker.postMessage({ type: 'close' } satisfies DecoderIn);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => void worker.terminate().then(() => resolve()), WORKER_EXIT_WAIT_MS);
    });
    return Promise.race([exited, forced]).finally(() => clearTimeout(timer));
  }

  /** Decoder threads running: 0 once every stream is closed. */
  get size(): number {
    return this.#threads.size;
  }

  /** Ends every decoder thread abruptly, as a crash would: their streams fail. */
  async terminateAll(): Promise<void> {
    await Promise.all([...this.#threads.keys()].map((worker) => worker.terminate()));
  }
}
