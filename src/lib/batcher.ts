/**
 * Group commit: items submitted in the same event-loop turn (up to `maxBatch`) are written by one
 * `flush` call; each submitter's promise settles when its batch has been written. If a batch
 * fails, its items are retried one by one so each submitter gets its own outcome.
 */
export class Batcher<T> {
  readonly #flush: (items: T[]) => Promise<void>;
  readonly #maxBatch: number;
  #pending: Array<{ item: T; resolve: () => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;

  constructor(flush: (items: T[]) => Promise<void>, maxBatch = 256) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
  }

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
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    this.#flush(batch.map((entry) => entry.item)).then(
      () => {
        for (const entry of batch) entry.resolve();
      },
      async (error: unknown) => {
        if (batch.length === 1) {
          batch[0]!.reject(error);
          return;
        }
        for (const entry of batch) {
          await this.#flush([entry.item]).then(entry.resolve, entry.reject);
        }
      },
    );
  }
}
