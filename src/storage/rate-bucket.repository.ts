import type { Clock } from '../lib/clock.ts';
import type { RateDecision } from '../lib/token-bucket.ts';
import { CompiledStatement } from './compiled.ts';
import type { Store } from './store.ts';

/** The window a bucket refills its whole capacity in, ms (a rate per minute). */
const WINDOW_MS = 60_000;

/**
 * Create-web-call token buckets shared by every server of one PostgreSQL database: one row per
 * account (`rate_buckets`), refilled continuously at the account's rate per minute and taken from
 * in one atomic statement, so N servers together allow what one would. A taken token costs one
 * round trip; a refusal one more, to say when the next token comes.
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

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
    const refilled = `least(excluded.tokens + 1, b.tokens + greatest(0, excluded.updated_at - b.updated_at) * (excluded.tokens + 1) / ${WINDOW_MS}.0)`;
    this.#take = new CompiledStatement(
      store,
      `insert into rate_buckets as b (account_id, tokens, updated_at) values (?, ?::double precision - 1, ?::bigint)
       on conflict (account_id) do update set tokens = ${refilled} - 1, updated_at = greatest(b.updated_at, excluded.updated_at)
       where ${refilled} >= 1
       returning tokens`,
    );
    this.#read = new CompiledStatement(store, 'select tokens, updated_at from rate_buckets where account_id = ?');
  }

  /** Takes one of `capacity` per minute tokens of `key`'s bucket; on refusal, the ms until the next. */
  async take(key: string, capacity: number): Promise<RateDecision> {
    const now = this.#clock.now();
    const taken = await this.#take.first(this.#store.db, [key, capacity, now]);
    if (taken) return { ok: true };
    const ratePerMs = capacity / WINDOW_MS;
    const bucket = await this.#read.first(this.#store.db, [key]);
    const tokens = bucket ? Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updated_at) * ratePerMs) : 0;
    return { ok: false, retryAfterMs: Math.max(1, Math.ceil((1 - tokens) / ratePerMs)) };
  }
}
