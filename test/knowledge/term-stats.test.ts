import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SELECTIVE_MIN_CHUNKS, SELECTIVE_POSTINGS, TermStats, inverseDocumentFrequency, selectiveTerms } from '../../src/storage/knowledge-term-stats.ts';

describe('the terms a search ranks by', () => {
  const n = SELECTIVE_MIN_CHUNKS * 2;

  it('leaves out terms in more than half the chunks of a large base, and terms found nowhere', () => {
    const df = new Map([['order', n - 3], ['refund', 40], ['zeppelin', 0], ['parcel', n / 2]]);
    assert.deepEqual(selectiveTerms(df, n), ['refund', 'parcel']);
  });

  it('keeps the rarest term when every term is common, so common words still find chunks', () => {
    assert.deepEqual(selectiveTerms(new Map([['order', n - 1], ['shop', n - 9], ['help', n]]), n), ['shop']);
    assert.deepEqual(selectiveTerms(new Map([['zeppelin', 0]]), n), []);
  });

  it('ranks a small base by every term found', () => {
    assert.deepEqual(selectiveTerms(new Map([['order', 9], ['refund', 1], ['zeppelin', 0]]), 10), ['refund', 'order']);
  });

  it('ranks the rarest terms first, within a bound on the postings ranked', () => {
    const big = SELECTIVE_POSTINGS * 4;
    const df = new Map([['shipping', SELECTIVE_POSTINGS - 100], ['cost', 300], ['canada', 80]]);
    assert.deepEqual(selectiveTerms(df, big), ['canada', 'cost'], 'shipping would pass the bound');
    assert.deepEqual(selectiveTerms(new Map([['shipping', SELECTIVE_POSTINGS + 1]]), big), ['shipping'], 'the rarest is kept whatever its count');
  });

  it('weighs a term less the more chunks hold it, and never below zero', () => {
    assert.ok(inverseDocumentFrequency(1, n) > inverseDocumentFrequency(n / 2, n));
    assert.ok(inverseDocumentFrequency(n, n) > 0);
  });
});

describe('remembered document frequencies', () => {
  const stamp = { sources: 2, updatedAt: 100, chunks: 600 };

  it('counts a term once per content, and again once the content changed', async () => {
    const stats = new TermStats();
    const counted: string[] = [];
    const count = async (term: string) => {
      counted.push(term);
      return term.length;
    };
    assert.deepEqual([...(await stats.frequencies(['kb_a'], stamp, ['refund', 'order'], count))], [['refund', 6], ['order', 5]]);
    await stats.frequencies(['kb_a'], stamp, ['order', 'parcel'], count);
    assert.deepEqual(counted, ['refund', 'order', 'parcel'], 'remembered for the same bases and content');
    await stats.frequencies(['kb_b', 'kb_a'], stamp, ['order'], count);
    assert.deepEqual(counted.slice(3), ['order'], 'another set of bases is counted apart');
    await stats.frequencies(['kb_a'], { ...stamp, chunks: 601 }, ['order'], count);
    assert.deepEqual(counted.slice(4), ['order'], 'a new stamp forgets what was counted');
    await stats.frequencies(['kb_a', 'kb_b'], stamp, ['order'], count);
    assert.deepEqual(counted.slice(5), [], 'the order of the bases does not matter');
  });
});
