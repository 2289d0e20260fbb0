import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Batcher } from '../../src/lib/batcher.ts';

/** A flush whose calls are recorded and finish only when the test says so. */
function gatedFlush<T>() {
  const calls: Array<{ items: T[]; finish: (error?: Error) => void }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const flush = (items: T[]) =>
    new Promise<void>((resolve, reject) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      calls.push({
        items: [...items],
        finish: (error) => {
          inFlight -= 1;
          if (error) reject(error);
          else resolve();
        },
      });
    });
  return { flush, calls, maxInFlight: () => maxInFlight };
}

describe('Batcher', () => {
  it('writes the items of one turn in one flush and settles each submitter', async () => {
    const written: number[][] = [];
    const batcher = new Batcher<number>(async (items) => {
      written.push([...items]);
    });
    await Promise.all([1, 2, 3].map((n) => batcher.submit(n)));
    assert.deepEqual(written, [[1, 2, 3]]);
  });

  it('flushes at once when a batch is full, and the rest on the next turn', async () => {
    const written: number[][] = [];
    const batcher = new Batcher<number>(async (items) => {
      written.push([...items]);
    }, 2);
    const submitted = [1, 2, 3].map((n) => batcher.submit(n));
    assert.deepEqual(written, [[1, 2]], 'the full batch went before the turn ended');
    await Promise.all(submitted);
    assert.deepEqual(written, [[1, 2], [3]]);
  });

  it('retries a failed batch item by item, so each submitter gets its own outcome', async () => {
    const calls: number[][] = [];
    const batcher = new Batcher<number>(async (items) => {
      calls.push([...items]);
      if (items.includes(2)) throw new Error(`bad ${items.join(',')}`);
    });
    const outcomes = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(n)));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal((outcomes[1] as PromiseRejectedResult).reason.message, 'bad 2');
    assert.deepEqual(calls, [[1, 2, 3], [1], [2], [3]]);
  });

  it('by default runs flushes side by side (one per turn)', async () => {
    const gate = gatedFlush<number>();
    const batcher = new Batcher<number>(gate.flush);
    const first = batcher.submit(1);
    await nextTurn();
    const second = batcher.submit(2);
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1], [2]]);
    assert.equal(gate.maxInFlight(), 2);
    for (const call of gate.calls) call.finish();
    await Promise.all([first, second]);
  });

  it('with maxConcurrentFlushes 1, holds items while a flush runs and writes them together after it', async () => {
    const gate = gatedFlush<number>();
    const batcher = new Batcher<number>(gate.flush, 256, { maxConcurrentFlushes: 1 });
    const settled: number[] = [];
    const submit = (n: number) => batcher.submit(n).then(() => void settled.push(n));
    const first = submit(1);
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1]]);

    // Submitted over several turns while the first flush runs: none is flushed yet.
    const waiting = [submit(2), submit(3)];
    await nextTurn();
    waiting.push(submit(4));
    await nextTurn();
    assert.equal(gate.calls.length, 1);
    assert.deepEqual(settled, []);

    gate.calls[0]!.finish();
    await first;
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1], [2, 3, 4]], 'everything waiting went in the next batch');
    gate.calls[1]!.finish();
    await Promise.all(waiting);
    assert.deepEqual(settled, [1, 2, 3, 4]);
    assert.equal(gate.maxInFlight(), 1);
  });

  it('with a concurrency limit, splits what waited into batches of maxBatch, one after the other', async () => {
    const gate = gatedFlush<number>();
    const batcher = new Batcher<number>(gate.flush, 2, { maxConcurrentFlushes: 1 });
    const all = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    assert.deepEqual(gate.calls.map((c) => c.items), [[1, 2]]);
    gate.calls[0]!.finish();
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1, 2], [3, 4]]);
    gate.calls[1]!.finish();
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1, 2], [3, 4], [5]]);
    gate.calls[2]!.finish();
    await Promise.all(all);
    assert.equal(gate.maxInFlight(), 1);
  });

  it('with a concurrency limit, item-by-item retries of a failed batch hold its slot', async () => {
    const gate = gatedFlush<number>();
    const batcher = new Batcher<number>(gate.flush, 256, { maxConcurrentFlushes: 1 });
    const first = [1, 2].map((n) => batcher.submit(n));
    await nextTurn();
    const outcomes = Promise.allSettled([...first, batcher.submit(3)]);
    await nextTurn();
    gate.calls[0]!.finish(new Error('batch failed'));
    await nextTurn();
    assert.deepEqual(gate.calls.map((c) => c.items), [[1, 2], [1]], 'the retry of 1 runs, 3 still waits');
    gate.calls[1]!.finish();
    await nextTurn();
    assert.deepEqual(gate.calls.at(-1)?.items, [2]);
    gate.calls[2]!.finish(new Error('2 alone failed'));
    await nextTurn();
    assert.deepEqual(gate.calls.at(-1)?.items, [3]);
    gate.calls[3]!.finish();
    assert.deepEqual(
      (await outcomes).map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(gate.maxInFlight(), 1);
  });
});
