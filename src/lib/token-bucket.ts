import type { Clock } from './clock.ts';

/** A token taken, or refused with the milliseconds until the next one. */
export type RateDecision = { ok: true } | { ok: false; retryAfterMs: number };

/** Takes create-web-call tokens: in this process (TokenBuckets), or shared by every server (storage/rate-bucket.repository.ts). */
export interface RateLimiter {
  /** Takes one of `capacity` per minute tokens of `key`'s bucket. */
  take(key: string, capacity: number): RateDecision | Promise<RateDecision>;
}

/**
 * Per-key token buckets: each key holds up to `capacity` tokens and regains `capacity` tokens per
 * `windowMs`, continuously. Idle buckets are forgotten after a window so memory stays bounded by
 * the number of active keys.
 */
export class TokenBuckets implements RateLimiter {
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #buckets = new Map<string, { tokens: number; capacity: number; updatedMs: number }>();

  constructor(clock: Clock, windowMs = 60_000) {
    this.#clock = clock;
    this.#windowMs = windowMs;
  }

  /** Takes one token; on refusal returns the milliseconds until one is available. */
  take(key: string, capacity: number): RateDecision {
    const now = this.#clock.now();
    let bucket = this.#buckets.get(key);
    if (!bucket || bucket.capacity !== capacity) {
      bucket = { tokens: capacity, capacity, updatedMs: now };
      this.#buckets.set(key, bucket);
    }
    const ratePerMs = capacity / this.#windowMs;
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.updatedMs) * ratePerMs);
    bucket.updatedMs = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.#sweep(now);
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil((1 - bucket.tokens) / ratePerMs) };
  }

  #lastSweepMs = 0;
  #sweep(now: number): void {
    if (now - this.#lastSweepMs < this.#windowMs) return;
    this.#lastSweepMs = now;
    for (const [key, bucket] of this.#buckets) {
      if (now - bucket.updatedMs > this.#windowMs) this.#buckets.delete(key);
    }
  }
}
