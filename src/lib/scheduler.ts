/**
 * Time for objects that run on timers (a call session's silence, duration and audio watchdogs):
 * a monotonic clock and timers behind one interface, injected so tests move time by hand
 * (ManualScheduler) instead of sleeping.
 */

/** An armed timer; pass it to `Scheduler.clear`. */
export interface TimerHandle {
  readonly kind: 'timeout' | 'interval';
}

export interface Scheduler {
  /** Monotonic milliseconds (not the wall clock: it never jumps). */
  now(): number;
  /** Runs `callback` once after `delayMs`. The timer never keeps the process alive. */
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  /** Runs `callback` every `intervalMs`. The timer never keeps the process alive. */
  setInterval(callback: () => void, intervalMs: number): TimerHandle;
  /** Disarms a timer; clearing one that already fired or was cleared is a no-op. */
  clear(handle: TimerHandle): void;
}

class RealTimer implements TimerHandle {
  readonly kind: 'timeout' | 'interval';
  readonly timer: ReturnType<typeof setTimeout>;
  constructor(kind: 'timeout' | 'interval', timer: ReturnType<typeof setTimeout>) {
    this.kind = kind;
    this.timer = timer;
  }
}

/** Node's timers (unref'd) and performance.now(). */
export const realScheduler: Scheduler = {
  now: () => performance.now(),
  setTimeout(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    timer.unref();
    return new RealTimer('timeout', timer);
  },
  setInterval(callback, intervalMs) {
    const timer = setInterval(callback, intervalMs);
    timer.unref();
    return new RealTimer('interval', timer);
  },
  clear(handle) {
    if (handle instanceof RealTimer) clearTimeout(handle.timer);
  },
};

class ManualTimer implements TimerHandle {
  readonly kind: 'timeout' | 'interval';
  dueAt: number;
  readonly intervalMs: number;
  readonly callback: () => void;
  /** Arming order: timers due at the same time run in it. */
  readonly seq: number;
  constructor(kind: 'timeout' | 'interval', dueAt: number, intervalMs: number, callback: () => void, seq: number) {
    this.kind = kind;
    this.dueAt = dueAt;
    this.intervalMs = intervalMs;
    this.callback = callback;
    this.seq = seq;
  }
}

/** A scheduler whose time moves only when told to (tests): `advance(ms)` runs what falls due, in order. */
export class ManualScheduler implements Scheduler {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<ManualTimer>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    return this.#add(new ManualTimer('timeout', this.#now + Math.max(0, delayMs), 0, callback, this.#seq++));
  }

  setInterval(callback: () => void, intervalMs: number): TimerHandle {
    const every = Math.max(1, intervalMs);
    return this.#add(new ManualTimer('interval', this.#now + every, every, callback, this.#seq++));
  }

  clear(handle: TimerHandle): void {
    if (handle instanceof ManualTimer) this.#timers.delete(handle);
  }

  /** Timers armed and not yet fired (intervals count until cleared). */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way, earliest first. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const t of this.#timers) if (t.dueAt <= until && (!next || t.dueAt < next.dueAt || (t.dueAt === next.dueAt && t.seq < next.seq))) next = t;
      if (!next) break;
      this.#now = next.dueAt;
      if (next.kind === 'interval') next.dueAt += next.intervalMs;
      else this.#timers.delete(next);
      next.callback();
    }
    this.#now = until;
  }

  #add(timer: ManualTimer): TimerHandle {
    this.#timers.add(timer);
    return timer;
  }
}
