import type { Clock } from '../lib/clock.ts';
import type { RateDecision } from '../lib/token-bucket.ts';
import { CompiledStatement } from './compiled.ts';
import type { Store } from './store.ts';

/** The window a bucket refills its whole capacity in, ms (a rate per minute). */
const WINDOW_MS = 60_000;

/**
 * Create-web-call token buckets shared by every server of one PostgreSQL database: one row per
 * account (`rate_buckets`), refilled continuously at the account's rate per minute and taken from
 * in atomic statements, so N servers together allow what one would.
 *
 * One account's row is a hot spot under load (every create of the account updates it), so each
 * server keeps at most one statement in flight per account: requests that arrive meanwhile wait
 * and are served together by the next statement, which takes all their tokens at once when the
 * bucket has them. When it has fewer, they are taken one by one (as before), so a limit is exact
 * however requests are grouped. A refusal costs one more read, to say when the next token comes.
 */
export class SharedRateBuckets {
  readonly #store: Store;
  readonly #clock: Clock;
  /**
   * Inserts a full bucket less one token, or refills the stored one for the time since its last
   * update and takes a token if one is there; returns a row only when a token was taken. The
   * capacity travels as excluded.tokens + 1. A server whose clock is behind neither refills nor
   * moves the bucket back in time.
   */
  readonly #take: CompiledStatement<{ tokens: number }>;
  readonly #read: CompiledStatement<{ tokens: number; updated_at: number }>;
  /** Per account: the requests waiting for the statement in flight to finish. */
  readonly #waiting = new Map<string, Array<{ capacity: number; resolve: (d: RateDecision) => void; reject: (e: unknown) => void }>>();

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
    const refilled = `least(excluded.tokens + ?::integer, b.tokens + greatest(0, excluded.updated_at - b.updated_at) * (excluded.tokens + ?::integer) / ${WINDOW_MS}.0)`;
    this.#take = new CompiledStatement(
      store,
      `insert into rate_buckets as b (account_id, tokens, updated_at) values (?, ?::double precision - ?::integer, ?::bigint)
       on conflict (account_id) do update set tokens = ${refilled} - ?::integer, updated_at = greatest(b.updated_at, excluded.updated_at)
       where ${refilled} >= ?::integer
       returning tokens`,
    );
    this.#read = new CompiledStatement(store, 'select tokens, updated_at from rate_buckets where account_id = ?');
  }

  /** Takes one of `capacity` per minute tokens of `key`'s bucket; on refusal, the ms until the next. */
  take(key: string, capacity: number): Promise<RateDecision> {
    const waiting = this.#waiting.get(key);
    if (waiting) {
      return new Promise((resolve, reject) => waiting.push({ capacity, resolve, reject }));
    }
    this.#waiting.set(key, []);
    return this.#takeOne(key, capacity).finally(() => void this.#drain(key));
  }

  /** Serves the requests that waited for `key`'s statement: together when the bucket has their tokens. */
  async #drain(key: string): Promise<void> {
    const batch = this.#waiting.get(key) ?? [];
    if (batch.length === 0) {
      this.#waiting.delete(key);
      return;
    }
    this.#waiting.set(key, []);
    try {
      // The account's rate is the same for every request in the batch but for a change in between.
      const capacity = batch[0]!.capacity;
      const together = batch.length > 1 && batch.length <= capacity && batch.every((r) => r.capacity === capacity);
      if (together && (await this.#takeTokens(key, capacity, batch.length))) {
        for (const r of batch) r.resolve({ ok: true });
      } else {
        for (const r of batch) await this.#takeOne(key, r.capacity).then(r.resolve, r.reject);
      }
    } catch (error) {
      for (const r of batch) r.reject(error);
    }
    await this.#drain(key);
  }

  async #takeOne(key: string, capacity: number): Promise<RateDecision> {
    const now = this.#clock.now();
    if (await this.#takeTokens(key, capacity, 1, now)) return { ok: true };
    const ratePerMs = capacity / WINDOW_MS;
    const bucket = await this.#read.first(this.#store.db, [key]);
    const tokens = bucket ? Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updated_at) * ratePerMs) : 0;
    return { ok: false, retryAfterMs: Math.max(1, Math.ceil((1 - tokens) / ratePerMs)) };
  }

  /** Takes `count` tokens (at most `capacity`) at once, or none; true when taken. */
  async #takeTokens(key: string, capacity: number, count: number, now = this.#clock.now()): Promise<boolean> {
    // Parameters in the statement's order: the refill expression appears in SET and WHERE, and
    // carries the capacity as excluded.tokens + count.
    const taken = await this.#take.first(this.#store.db, [key, capacity, count, now, count, count, count, count, count, count]);
    return taken !== undefined;
  }
}
