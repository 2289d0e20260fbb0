import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AttemptInput, decideAttempt } from '../../src/webhooks/attempt-outcome.ts';
import type { SendResult } from '../../src/webhooks/http-client.ts';

const NOW = 1_800_000_000_000;
const SCHEDULE = [5_000, 300_000, 1_800_000];

type Result = AttemptInput['result'];
const ok: Result = { failure: null, statusCode: 200, retryAfterMs: null };
const http = (statusCode: number, retryAfterMs: number | null = null): Result => ({ failure: 'http', statusCode, retryAfterMs });
const noResponse = (failure: Exclude<SendResult['failure'], null | 'http'>): Result => ({ failure, statusCode: null, retryAfterMs: null });

/** An attempt with every field defaulted; `random` counts its calls and answers 0.5 (no jitter). */
function decide(overrides: Partial<AttemptInput> & { result: Result }) {
  let randomCalls = 0;
  const decision = decideAttempt({
    attempt: 1,
    manual: false,
    lane: 0,
    nowMs: NOW,
    retryScheduleMs: SCHEDULE,
    random: () => {
      randomCalls += 1;
      return 0.5;
    },
    ...overrides,
  });
  return { ...decision, randomCalls };
}

describe('decideAttempt', () => {
  it('a 2xx is delivered, keeps its lane and ends the subscription\'s run of failures', () => {
    for (const lane of [0, 1] as const) {
      assert.deepEqual(decide({ result: ok, lane, attempt: 3 }), {
        outcome: 'delivered', status: 'delivered', lane, nextAttemptAt: null, webhook: 'succeeded', randomCalls: 0,
      });
    }
    assert.equal(decide({ result: ok, manual: true }).outcome, 'delivered');
  });

  it('a refused destination is never retried and never counts against the subscription', () => {
    for (const manual of [false, true]) {
      assert.deepEqual(decide({ result: noResponse('refused'), manual, lane: 1 }), {
        outcome: 'refused', status: 'failed', lane: 1, nextAttemptAt: null, webhook: 'unaffected', randomCalls: 0,
      });
    }
  });

  it('a 410 is gone: no retry although the schedule has some left, and the subscription is disabled', () => {
    assert.deepEqual(decide({ result: http(410), attempt: 1 }), {
      outcome: 'gone', status: 'failed', lane: 0, nextAttemptAt: null, webhook: 'gone', randomCalls: 0,
    });
  });

  it('a 410 on a manual redelivery is gone too, not failed', () => {
    const decision = decide({ result: http(410), manual: true });
    assert.equal(decision.outcome, 'gone');
    assert.equal(decision.webhook, 'gone');
    assert.equal(decision.nextAttemptAt, null);
  });

  it('a failed manual redelivery is failed: not rescheduled, even a 429 with Retry-After, but it counts against the subscription', () => {
    for (const result of [http(500), http(429, 60_000), noResponse('timeout'), noResponse('network')]) {
      assert.deepEqual(decide({ result, manual: true, attempt: 2 }), {
        outcome: 'failed', status: 'failed', lane: 0, nextAttemptAt: null, webhook: 'failed', randomCalls: 0,
      });
    }
  });

  it('any other failure is retried in lane 1 after the scheduled delay for that attempt', () => {
    for (const result of [http(500), http(503, 60_000), http(301), noResponse('timeout'), noResponse('network')]) {
      assert.deepEqual(decide({ result, attempt: 1, lane: 0 }), {
        outcome: 'retrying', status: 'pending', lane: 1, nextAttemptAt: NOW + 5_000, webhook: 'failed', randomCalls: 1,
      });
    }
    assert.equal(decide({ result: http(500), attempt: 2, lane: 1 }).nextAttemptAt, NOW + 300_000);
  });

  it('jitters the delay by up to 20 % either way with the injected random', () => {
    const at = (random: number) =>
      decideAttempt({ attempt: 2, manual: false, lane: 1, result: http(500), nowMs: NOW, retryScheduleMs: SCHEDULE, random: () => random }).nextAttemptAt;
    assert.equal(at(0), NOW + 240_000);
    assert.equal(at(0.25), NOW + 270_000);
    assert.equal(at(0.999_999), NOW + 360_000);
  });

  it('the last scheduled attempt is still retried; the one after it is exhausted and keeps its lane', () => {
    assert.equal(decide({ result: http(500), attempt: SCHEDULE.length, lane: 1 }).outcome, 'retrying');
    assert.deepEqual(decide({ result: http(500), attempt: SCHEDULE.length + 1, lane: 1 }), {
      outcome: 'exhausted', status: 'failed', lane: 1, nextAttemptAt: null, webhook: 'failed', randomCalls: 0,
    });
  });

  it('with an empty schedule the first failure is exhausted', () => {
    const decision = decide({ result: http(500), retryScheduleMs: [] });
    assert.equal(decision.outcome, 'exhausted');
    assert.equal(decision.lane, 0);
  });

  it('a 429 honours a longer Retry-After, never retrying sooner than the schedule, clamped to 24 h', () => {
    assert.equal(decide({ result: http(429, 60_000) }).nextAttemptAt, NOW + 60_000, 'longer than the 5 s scheduled');
    assert.equal(decide({ result: http(429, 1_000) }).nextAttemptAt, NOW + 5_000, 'shorter: the schedule wins');
    assert.equal(decide({ result: http(429, 10 * 86_400_000) }).nextAttemptAt, NOW + 86_400_000, 'clamped');
    assert.equal(decide({ result: http(429, null) }).nextAttemptAt, NOW + 5_000, 'without Retry-After: the schedule');
    assert.equal(decide({ result: http(503, 60_000) }).nextAttemptAt, NOW + 5_000, 'only a 429 is honoured');
  });

  it('a 429 after the last scheduled attempt is exhausted whatever its Retry-After', () => {
    assert.equal(decide({ result: http(429, 60_000), attempt: SCHEDULE.length + 1 }).outcome, 'exhausted');
  });
});
