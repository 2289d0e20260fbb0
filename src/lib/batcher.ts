export interface BatcherOptions {
  /**
   * Flushes in flight at once (default: no limit). At the limit, submitted items wait, and when a
   * flush finishes the next batch takes everything waiting (up to `maxBatch`), so a slow flush
   * makes the following batches larger instead of running more flushes side by side.
   */
  maxConcurrentFlushes?: number;
}

interface Entry<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items submitted in the same event-loop turn (up to `maxBatch`) are written by one
 * `flush` call; each submitter's promise settles when its batch has been written. If a batch
 * fails, its items are retried one by one so each submitter gets its own outcome.
 */
export class Batcher<T> {
  readonly #flush: (items: T[]) => Promise<void>;
  readonly #maxBatch: number;
  readonly #maxConcurrent: number;
  #pending: Array<Entry<T>> = [];
  #scheduled = false;
  #flushing = 0;
  /** Items are waiting for a flush to finish (the concurrency limit was reached). */
  #blocked = false;

  /**
   * @param flush writes a batch; rejecting makes the batch's items be retried one by one.
   * @param maxBatch items per `flush` call at most (default 256).
   */
  constructor(flush: (items: T[]) => Promise<void>, maxBatch = 256, options: BatcherOptions = {}) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
    this.#maxConcurrent = options.maxConcurrentFlushes ?? Infinity;
  }

  /** Resolves when the item has been written, rejects with the error that writing it alone met. */
  submit(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#maxBatch) this.#drain();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#drain());
      }
    });
  }

  #drain(): void {
    this.#scheduled = false;
    while (this.#pending.length > 0) {
      if (this.#flushing >= this.#maxConcurrent) {
        this.#blocked = true;
        return;
      }
      const batch = this.#pending.length <= this.#maxBatch ? this.#pending : this.#pending.slice(0, this.#maxBatch);
      this.#pending = batch === this.#pending ? [] : this.#pending.slice(this.#maxBatch);
      this.#flushing += 1;
      void this.#write(batch).finally(() => {
        this.#flushing -= 1;
        if (this.#blocked) {
          this.#blocked = false;
          this.#drain();
        }
      });
    }
  }

  /** Writes a batch and settles each of its items; never rejects. */
  async #write(batch: Array<Entry<T>>): Promise<void> {
    try {
      await this.#flush(batch.map((entry) => entry.item));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      for (const entry of batch) {
        await this.#flush([entry.item]).then(entry.resolve, entry.reject);
      }
      return;
    }
    for (const entry of batch) entry.resolve();
  }
}
