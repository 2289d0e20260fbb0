/** Wall-clock time in epoch milliseconds; injected everywhere so tests can move time by hand. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  #nowMs: number;
  constructor(startMs = Date.UTC(2026, 10, 21, 10, 0, 0)) {
    this.#nowMs = startMs;
  }
  now(): number {
    return this.#nowMs;
  }
  advance(ms: number): void {
    this.#nowMs += ms;
  }
  set(ms: number): void {
    this.#nowMs = ms;
  }
}
