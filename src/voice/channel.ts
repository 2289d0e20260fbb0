/**
 * A bounded, single-consumer async queue: the one push-source primitive of the voice pipeline.
 *
 * Real-time paths never buffer without limit, so every channel has a capacity and an explicit
 * overflow policy:
 * - `drop_oldest`: a push into a full channel evicts the oldest item (live audio input: fresher is better).
 * - `drop_newest`: a push into a full channel is discarded (bursty, optional events).
 * - `block`: `push()` returns a promise that resolves once there is room (backpressure for producers
 *   that can wait, e.g. synthesis feeding the paced audio output).
 */
export type OverflowPolicy = 'drop_oldest' | 'drop_newest' | 'block';

export interface ChannelOptions {
  /** Maximum number of queued items; must be >= 1. */
  capacity: number;
  /** What a push into a full channel does. */
  overflow: OverflowPolicy;
}

export class ChannelClosedError extends Error {
  constructor() {
    super('channel closed');
    this.name = 'ChannelClosedError';
  }
}

export class Channel<T> implements AsyncIterable<T> {
  readonly #capacity: number;
  readonly #overflow: OverflowPolicy;
  #items: T[] = [];
  #closed = false;
  #dropped = 0;
  #takers: Array<(r: IteratorResult<T>) => void> = [];
  #pushers: Array<{ item: T; resolve: () => void; reject: (e: Error) => void }> = [];

  constructor(options: ChannelOptions) {
    if (!(options.capacity >= 1)) throw new RangeError('channel capacity must be >= 1');
    this.#capacity = options.capacity;
    this.#overflow = options.overflow;
  }

  /** Items currently queued. */
  get size(): number {
    return this.#items.length;
  }
  /** Items discarded by the overflow policy so far. */
  get dropped(): number {
    return this.#dropped;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Enqueues an item. With `block`, resolves when the item is queued (rejects with
   * ChannelClosedError if the channel closes first); with the drop policies, resolves at once.
   * Pushing into a closed channel is a no-op (drop) for drop policies and rejects for `block`.
   */
  push(item: T): Promise<void> {
    if (this.#closed) {
      if (this.#overflow === 'block') return Promise.reject(new ChannelClosedError());
      return Promise.resolve();
    }
    const taker = this.#takers.shift();
    if (taker) {
      taker({ value: item, done: false });
      return Promise.resolve();
    }
    if (this.#items.length < this.#capacity) {
      this.#items.push(item);
      return Promise.resolve();
    }
    switch (this.#overflow) {
      case 'drop_oldest': {
        this.#items.shift();
        this.#dropped++;
        this.#items.push(item);
        return Promise.resolve();
      }
      case 'drop_newest':
        this.#dropped++;
        return Promise.resolve();
      case 'block':
        return new Promise<void>((resolve, reject) => this.#pushers.push({ item, resolve, reject }));
    }
  }

  /** Removes every queued item (and every blocked push, which then resolves as dropped). */
  clear(): void {
    this.#dropped += this.#items.length;
    this.#items = [];
    for (const p of this.#pushers.splice(0)) {
      this.#dropped++;
      p.resolve();
    }
  }

  /** Takes the next item, or `undefined` at once when the channel is empty. */
  tryShift(): T | undefined {
    const item = this.#items.shift();
    if (item !== undefined) this.#admitBlocked();
    return item;
  }

  /** Waits for the next item; `done` once the channel is closed and drained. */
  next(): Promise<IteratorResult<T>> {
    const item = this.#items.shift();
    if (item !== undefined) {
      this.#admitBlocked();
      return Promise.resolve({ value: item, done: false });
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#takers.push(resolve));
  }

  /** Idempotent: queued items can still be read; waiting readers finish; blocked pushes reject. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#takers.splice(0)) t({ value: undefined, done: true });
    for (const p of this.#pushers.splice(0)) p.reject(new ChannelClosedError());
  }

  #admitBlocked(): void {
    while (this.#items.length < this.#capacity) {
      const p = this.#pushers.shift();
      if (!p) return;
      this.#items.push(p.item);
      p.resolve();
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
