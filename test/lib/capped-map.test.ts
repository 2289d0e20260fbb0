import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CappedMap } from '../../src/lib/capped-map.ts';

describe('CappedMap', () => {
  it('keeps at most max entries, dropping the oldest for a new key and none for an existing one', () => {
    const map = new CappedMap<string, number>(2);
    map.set('a', 1).set('b', 2);
    map.set('a', 10);
    assert.deepEqual([...map], [['a', 10], ['b', 2]], 'replacing a key drops nothing');
    map.set('c', 3);
    assert.deepEqual([...map], [['b', 2], ['c', 3]], 'a new key drops the oldest');
    assert.equal(map.size, 2);
  });
});
