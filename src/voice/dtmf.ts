import type { Scheduler, TimerHandle } from '../lib/scheduler.ts';

/** How keypad input becomes one turn of the caller (Retell's `user_dtmf_options`). */
export interface DtmfOptions {
  /** The turn ends at this many digits (1 to 50; default 50). */
  digitLimit: number;
  /** The key that ends the turn (not part of it); null: none. Default `#`. */
  terminationKey: string | null;
  /** The turn ends this long after the last key, ms (default 2500). */
  timeoutMs: number;
}

export const DEFAULT_DTMF_OPTIONS: DtmfOptions = { digitLimit: 50, terminationKey: '#', timeoutMs: 2_500 };

/**
 * Collects keys pressed on a phone into one turn: it ends at the termination key, at the digit
 * limit (the options', or a lower one given with the keys), or `timeoutMs` after the last key,
 * whichever comes first; `onTurn` gets the digits (the termination key alone makes an empty turn,
 * which is not reported).
 */
export class DtmfCollector {
  readonly #options: DtmfOptions;
  readonly #time: Scheduler;
  readonly #onTurn: (digits: string) => void;
  #digits = '';
  #timer: TimerHandle | null = null;

  constructor(options: DtmfOptions, time: Scheduler, onTurn: (digits: string) => void) {
    this.#options = options;
    this.#time = time;
    this.#onTurn = onTurn;
  }

  /**
   * Keys pressed, in order (any of 0-9, *, #, A-D; others are ignored). `digitLimit`: where this
   * turn ends, when lower than the options' (the current flow node's digits variable's max_digits).
   */
  push(keys: string, digitLimit = this.#options.digitLimit): void {
    for (const key of keys) {
      if (!/^[0-9*#A-D]$/.test(key)) continue;
      if (key === this.#options.terminationKey) {
        this.#flush();
        continue;
      }
      this.#digits += key;
      if (this.#digits.length >= Math.min(digitLimit, this.#options.digitLimit)) {
        this.#flush();
        continue;
      }
      this.#arm();
    }
  }

  close(): void {
    if (this.#timer) this.#time.clear(this.#timer);
    this.#timer = null;
    this.#digits = '';
  }

  #arm(): void {
    if (this.#timer) this.#time.clear(this.#timer);
    this.#timer = this.#time.setTimeout(() => {
      this.#timer = null;
      this.#flush();
    }, this.#options.timeoutMs);
  }

  #flush(): void {
    if (this.#timer) this.#time.clear(this.#timer);
    this.#timer = null;
    const digits = this.#digits;
    this.#digits = '';
    if (digits !== '') this.#onTurn(digits);
  }
}
