/**
 * Runs `task` every `intervalMs`, never two at once; `close()` stops it and waits for a run in
 * progress. Errors go to `onError` and the loop goes on.
 */
export class PeriodicTask {
  readonly #task: () => Promise<unknown>;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #closed = false;

  constructor(task: () => Promise<unknown>, intervalMs: number, onError: (error: unknown) => void) {
    this.#task = task;
    this.#onError = onError;
    this.#timer = setInterval(() => void this.runNow(), intervalMs);
    this.#timer.unref();
  }

  /** Runs the task now unless a run is in progress (then waits for that one). */
  runNow(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#running ??= this.#task()
      .then(() => undefined, this.#onError)
      .finally(() => {
        this.#running = null;
      });
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
