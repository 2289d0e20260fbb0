import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoalescedRun } from '../../src/lib/coalesced-run.ts';

/** A run the test finishes by hand. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

test('requests during a run are served by exactly one more run, which starts after them', async () => {
  const gates = [gate(), gate()];
  const seen: number[] = [];
  let value = 0;
  let runs = 0;
  const run = new CoalescedRun(
    async () => {
      const at = runs++;
      seen.push(value);
      await gates[at]!.opened;
    },
    { onError: (error) => assert.fail(String(error)) },
  );
  const first = run.request();
  value = 1;
  void run.request();
  value = 2;
  const third = run.request();
  assert.equal(third, first, 'a request during a run joins the runs in progress');
  gates[0]!.open();
  await new Promise((resolve) => setImmediate(resolve));
  gates[1]!.open();
  await first;
  assert.deepEqual(seen, [0, 2], 'two runs, the second seeing the latest value');
  assert.equal(run.running, null);
});

test('a failed run is reported, ends the runs asked for, and the next request starts afresh', async () => {
  const errors: unknown[] = [];
  let idle = 0;
  let fail = true;
  let runs = 0;
  const run = new CoalescedRun(
    async () => {
      runs++;
      if (fail) throw new Error('boom');
    },
    { onError: (error) => errors.push(error), idle: () => idle++ },
  );
  await run.request();
  assert.equal(errors.length, 1);
  assert.equal(idle, 1);
  fail = false;
  await run.request();
  assert.equal(runs, 2);
  assert.equal(idle, 2);
});

test('once stopped, no further run starts', async () => {
  let stopped = false;
  let runs = 0;
  const g = gate();
  const run = new CoalescedRun(
    async () => {
      runs++;
      await g.opened;
    },
    { stopped: () => stopped, onError: (error) => assert.fail(String(error)) },
  );
  const first = run.request();
  void run.request();
  stopped = true;
  g.open();
  await first;
  await run.request();
  assert.equal(runs, 1);
});
