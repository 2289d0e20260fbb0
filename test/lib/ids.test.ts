import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { ID_PREFIXES, type IdKind, isId, newId } from '../../src/lib/ids.ts';

describe('ids', () => {
  it('are <prefix>_<32 hex> for every kind, and recognised only as their own kind', () => {
    for (const kind of Object.keys(ID_PREFIXES) as IdKind[]) {
      const id = newId(kind);
      assert.match(id, new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-f]{32}$`));
      assert.ok(isId(kind, id));
      for (const other of Object.keys(ID_PREFIXES) as IdKind[]) if (other !== kind) assert.ok(!isId(other, id), `${id} is not a ${other} id`);
    }
    assert.ok(!isId('call', 'call_0123'));
    assert.ok(!isId('call', `call_${'G'.repeat(32)}`));
  });

  it('begin with their creation time, so later ids sort after earlier ones', async () => {
    const before = Date.now();
    const first = newId('call');
    const after = Date.now();
    const time = Number.parseInt(first.slice('call_'.length, 'call_'.length + 12), 16);
    assert.ok(time >= before && time <= after, `${time} within [${before}, ${after}]`);
    await sleep(2);
    const second = newId('call');
    assert.ok(second > first, `${second} sorts after ${first}`);
  });

  it('do not repeat within one millisecond (80 random bits after the time)', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 100_000; i++) ids.add(newId('event'));
    assert.equal(ids.size, 100_000);
    const tails = new Set([...ids].map((id) => id.slice(-20)));
    assert.equal(tails.size, 100_000, 'the random part alone is unique');
  });
});
