// Issue 25: room on a bounded recogniser held for a call from its creation to its join
// (src/providers/reserved-stt.ts), over the embedded recogniser's own stream bound (DecoderPool.admit,
// which needs no decoder thread), on a clock moved by hand.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { DecoderPool } from '../../src/providers/pocketsphinx/decoder-pool.ts';
import { ReservedStt } from '../../src/providers/reserved-stt.ts';
import type { SttProvider, SttStream } from '../../src/providers/stt.ts';

/** A recogniser whose streams are bounded as the embedded one's are (admitted synchronously, refused beyond `max`). */
function bounded(max: number): SttProvider {
  const pool = new DecoderPool({ maxStreams: max });
  return {
    id: 'bounded',
    languages: () => ['en-US'],
    capacity: () => ({ open: pool.streams, max: pool.maxStreams }),
    openStream: async () => {
      const leave = pool.admit();
      await Promise.resolve();
      const stream: SttStream = {
        write: () => {},
        finalize: async () => ({ text: '' }),
        close: async () => leave(),
      };
      return stream;
    },
  };
}

test('a reserved call joins although unreserved streams filled the rest; the last room is refused to both', async () => {
  const clock = new ManualClock();
  const stt = new ReservedStt(bounded(2), clock);
  assert.equal(stt.reserve('call_a', clock.now() + 30_000), undefined);
  const other = await stt.openStream(); // an agent test, or a call created on another server
  assert.deepEqual(stt.capacity(), { open: 2, max: 2 });
  assert.deepEqual(stt.reserve('call_b', clock.now() + 30_000), { open: 2, max: 2 }, 'full: a new call is refused');
  await assert.rejects(stt.openStream(), (e: unknown) => e instanceof ProviderError && e.retryable && /held for calls about to join/.test(e.message));

  const joined = await stt.forCall('call_a').openStream(); // never refused: its room was held
  assert.equal(stt.reserved(), 0);
  assert.deepEqual(stt.capacity(), { open: 2, max: 2 });
  await joined.close();
  await other.close();
  assert.deepEqual(stt.capacity(), { open: 0, max: 2 });
});

test('room held ends with the join window, or when released (ended, deleted); a call with none joins if there is room', async () => {
  const clock = new ManualClock();
  const stt = new ReservedStt(bounded(1), clock);
  assert.equal(stt.reserve('call_a', clock.now() + 30_000), undefined);
  assert.ok(stt.reserve('call_b', clock.now() + 30_000), 'held by call_a');
  clock.advance(30_000);
  assert.equal(stt.reserved(), 0, 'its join window is over');
  assert.equal(stt.reserve('call_b', clock.now() + 30_000), undefined);
  stt.release('call_b');
  stt.release('call_b'); // idempotent
  assert.deepEqual(stt.capacity(), { open: 0, max: 1 });

  // call_a's window ended: it joins only as any unreserved stream would, while there is room.
  const late = await stt.forCall('call_a').openStream();
  await assert.rejects(stt.forCall('call_c').openStream(), ProviderError);
  await late.close();
});

test('an unbounded recogniser reserves and refuses nothing', async () => {
  const inner: SttProvider = { id: 'open', languages: () => ['en-US'], openStream: bounded(1).openStream };
  const stt = new ReservedStt(inner, new ManualClock());
  assert.equal(stt.capacity(), undefined);
  assert.equal(stt.reserve('call_a', Number.MAX_SAFE_INTEGER), undefined);
  assert.equal(stt.reserved(), 0);
});
