import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abortable } from '../../src/lib/abortable.ts';

describe('abortable', () => {
  it('settles as the promise does while the signal stays quiet', async () => {
    const controller = new AbortController();
    assert.equal(await abortable(Promise.resolve(7), controller.signal), 7);
    const failure = new Error('boom');
    await assert.rejects(abortable(Promise.reject(failure), controller.signal), (error) => error === failure);
    const notAnError: unknown = 'x';
    await assert.rejects(abortable(Promise.reject(notAnError), controller.signal), { message: 'x' }, 'a rejection that is no Error is wrapped');
  });

  it('rejects with the reason as soon as the signal aborts, or at once when it already has', async () => {
    const controller = new AbortController();
    const reason = new Error('stopped');
    const never = new Promise<never>(() => {});
    const waiting = abortable(never, controller.signal);
    controller.abort(reason);
    await assert.rejects(waiting, (error) => error === reason);
    await assert.rejects(abortable(Promise.resolve(1), controller.signal), (error) => error === reason);
  });
});
