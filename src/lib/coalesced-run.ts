/**
 * Work that runs one at a time and never misses a request: asked for while it runs, it runs once
 * more after the run in progress, however many times it was asked meanwhile, so the latest request
 * is always served by a run that started after it. A call's checkpoint writes, its variable
 * re-reads and the webhook pump's claims are such work.
 */
export class CoalescedRun {
  readonly #work: () => Promise<void>;
  readonly #stopped: () => boolean;
  readonly #onError: (error: unknown) => void;
  readonly #idle: () => void;
  #running: Promise<void> | null = null;
  #again = false;

  /**
   * `stopped`: checked before each run; once true, no further run starts. `onError`: what a failed
   * run is told to; it ends the runs asked for so far (the next request starts afresh). `idle`:
   * told each time the last run asked for has ended.
   */
  constructor(work: () => Promise<void>, options: { stopped?: () => boolean; onError: (error: unknown) => void; idle?: () => void }) {
    this.#work = work;
    this.#stopped = options.stopped ?? (() => false);
    this.#onError = options.onError;
    this.#idle = options.idle ?? (() => {});
  }

  /** The runs in progress and asked for, settled when none is left (never rejects); null when idle. */
  get running(): Promise<void> | null {
    return this.#running;
  }

  /** Runs the work now, or once more after the run in progress. Resolves when no run is left. */
  request(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const running = (async () => {
      do {
        this.#again = false;
        if (this.#stopped()) return;
        await this.#work();
      } while (this.#again);
    })()
      .catch(this.#onError)
      .finally(() => {
        this.#running = null;
        this.#idle();
      });
    this.#running = running;
    return running;
  }
}
