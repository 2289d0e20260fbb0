// Issue 24: keypad input becomes one turn of the caller, as Retell's user_dtmf_options say: it ends
// at the termination key (not part of the turn), at the digit limit, or the timeout after the last key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import { DtmfCollector } from '../../src/voice/dtmf.ts';

const collect = (options: { digitLimit?: number; terminationKey?: string | null; timeoutMs?: number } = {}) => {
  const time = new ManualScheduler(0);
  const turns: string[] = [];
  const collector = new DtmfCollector({ digitLimit: 50, terminationKey: '#', timeoutMs: 2_500, ...options }, time, (digits) => turns.push(digits));
  return { time, turns, collector };
};

describe('DTMF turns', () => {
  it('ends a turn at the termination key, which is not part of it; the key alone makes no turn', () => {
    const { time, turns, collector } = collect();
    collector.push('12');
    collector.push('34#');
    assert.deepEqual(turns, ['1234']);
    collector.push('#');
    time.advance(10_000);
    assert.deepEqual(turns, ['1234'], 'no empty turn, and no timeout after the turn ended');
  });

  it('ends a turn at the digit limit', () => {
    const { turns, collector } = collect({ digitLimit: 4 });
    collector.push('123456');
    assert.deepEqual(turns, ['1234']);
  });

  it("ends a turn at a lower limit given with the keys (a flow node's max_digits), never past the options' own", () => {
    const { turns, collector } = collect({ digitLimit: 4 });
    collector.push('12', 1);
    collector.push('3', 1);
    collector.push('456789', 8);
    assert.deepEqual(turns, ['1', '2', '3', '4567']);
  });

  it('ends a turn the timeout after the last key, each key restarting it', () => {
    const { time, turns, collector } = collect({ timeoutMs: 1_000 });
    collector.push('9');
    time.advance(900);
    collector.push('8');
    time.advance(900);
    assert.deepEqual(turns, [], 'the second key restarted the timeout');
    time.advance(100);
    assert.deepEqual(turns, ['98']);
  });

  it('takes * and # as digits when another key ends the turn, or none does; ignores what is not a key', () => {
    const { time, turns, collector } = collect({ terminationKey: null, timeoutMs: 500 });
    collector.push('*1#x');
    time.advance(500);
    assert.deepEqual(turns, ['*1#']);
    collector.push('5');
    collector.close();
    time.advance(1_000);
    assert.deepEqual(turns, ['*1#'], 'closed: nothing more');
  });
});
