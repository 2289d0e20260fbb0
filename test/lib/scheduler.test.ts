import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualScheduler, realScheduler } from '../../src/lib/scheduler.ts';

describe('ManualScheduler', () => {
  it('runs timers that fall due, earliest first, at their own time; intervals repeat until cleared', () => {
    const s = new ManualScheduler(100);
    const ran: string[] = [];
    s.setTimeout(() => ran.push(`b@${s.now()}`), 20);
    s.setTimeout(() => ran.push(`a@${s.now()}`), 10);
    const tick = s.setInterval(() => ran.push(`i@${s.now()}`), 15);
    s.advance(9);
    assert.deepEqual(ran, []);
    s.advance(26);
    assert.deepEqual(ran, ['a@110', 'i@115', 'b@120', 'i@130']);
    assert.equal(s.now(), 135);
    s.clear(tick);
    s.advance(100);
    assert.equal(ran.length, 4);
    assert.equal(s.pending, 0);
  });

  it('timers due at the same time run in the order they were armed; a timer armed by a timer runs if due', () => {
    const s = new ManualScheduler();
    const ran: number[] = [];
    s.setTimeout(() => ran.push(1), 5);
    s.setTimeout(() => {
      ran.push(2);
      s.setTimeout(() => ran.push(4), 0);
    }, 5);
    s.setTimeout(() => ran.push(3), 5);
    s.advance(5);
    assert.deepEqual(ran, [1, 2, 3, 4]);
  });

  it('clearing a fired or foreign timer is a no-op', () => {
    const s = new ManualScheduler();
    const t = s.setTimeout(() => {}, 1);
    s.advance(1);
    s.clear(t);
    s.clear(realScheduler.setTimeout(() => {}, 1));
    assert.equal(s.pending, 0);
  });
});
