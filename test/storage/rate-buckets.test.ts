import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.ts';
import { SharedRateBuckets } from '../../src/storage/rate-bucket.repository.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres')!;

describe('shared rate buckets (postgres)', { skip: postgres.skip }, () => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore('postgres');
  });
  after(() => store.close());

  it('grants exactly the capacity to a burst from two servers, however the requests are grouped', async () => {
    const clock = new ManualClock();
    // Two servers' buckets on one database; each groups its waiting requests into one statement.
    const servers = [new SharedRateBuckets(store.store, clock), new SharedRateBuckets(store.store, clock)];
    const decisions = await Promise.all(Array.from({ length: 90 }, (_, i) => servers[i % 2]!.take('acct_burst', 30)));
    assert.equal(decisions.filter((d) => d.ok).length, 30, 'exactly the capacity');
    for (const d of decisions) if (!d.ok) assert.ok(d.retryAfterMs > 0 && d.retryAfterMs <= 2_000, `retry after ${d.retryAfterMs} ms`);
  });

  it('refills at the account rate and serves a batch only when the bucket holds all of it', async () => {
    const clock = new ManualClock();
    const buckets = new SharedRateBuckets(store.store, clock);
    const first = await Promise.all(Array.from({ length: 10 }, () => buckets.take('acct_refill', 10)));
    assert.equal(first.filter((d) => d.ok).length, 10);
    clock.advance(30_000); // half a minute: 5 of 10 tokens back
    const second = await Promise.all(Array.from({ length: 8 }, () => buckets.take('acct_refill', 10)));
    assert.equal(second.filter((d) => d.ok).length, 5, 'a batch of 8 falls back to one token at a time');
  });
});
