/**
 * GET /v2/call-stats on both stores: calls per day by status and outcome, the end-to-end reply
 * latency p50 / p90 per day over every reply, empty days listed, the agent filter, days cut at a
 * UTC offset, the account's own calls only, and the range rules (400).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LatencySummary } from '../../src/domain/call.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

const DAY = 86_400_000;
/** 2026-03-10T00:00:00Z. */
const DAY0 = Date.UTC(2026, 2, 10);

const summary = (values: number[]): LatencySummary => ({ p50: 0, p90: 0, p95: 0, p99: 0, min: 0, max: 0, num: values.length, values });
const latency = (e2e: number[]) => ({ e2e: summary(e2e), asr: summary([]), llm: summary([]), tts: summary([]) });

for (const kind of STORES) {
  describe(`call-stats on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentA: string;
    let agentB: string;

    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ agentId: agentA } = await createFlowAgent(h, key));
      ({ agentId: agentB } = await createFlowAgent(h, key));
      const calls = h.runtime.services.lifecycle;
      const make = async (at: number, agentId: string, outcome?: { reason: 'agent_hangup' | 'error_llm'; successful?: boolean; e2e?: number[] }) => {
        h.clock.set(at);
        const res = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
        assert.equal(res.status, 201);
        if (!outcome) return;
        await calls.joinCall(res.json.access_token);
        await calls.finishCall(res.json.call_id, {
          reason: outcome.reason,
          ...(outcome.successful === undefined ? {} : { callAnalysis: { call_summary: 's', call_successful: outcome.successful, user_sentiment: 'Neutral' } }),
          ...(outcome.e2e ? { latency: latency(outcome.e2e) } : {}),
        });
      };
      // Day 0: three ended calls of A (two successful, one not) with replies 100..1000 ms, one error of B.
      await make(DAY0 + 1 * 3_600_000, agentA, { reason: 'agent_hangup', successful: true, e2e: [100, 200, 300, 400] });
      await make(DAY0 + 2 * 3_600_000, agentA, { reason: 'agent_hangup', successful: true, e2e: [500, 600, 700] });
      await make(DAY0 + 3 * 3_600_000, agentA, { reason: 'agent_hangup', successful: false, e2e: [800, 900, 1000] });
      await make(DAY0 + 4 * 3_600_000, agentB, { reason: 'error_llm' });
      // Day 1: nothing. Day 2: one registered call of B, 30 minutes after midnight UTC.
      await make(DAY0 + 2 * DAY + 30 * 60_000, agentB);
      // Another account's call on day 0 is never counted.
      const other = await h.account();
      const { agentId: otherAgent } = await createFlowAgent(h, other.apiKey);
      h.clock.set(DAY0 + 5 * 3_600_000);
      assert.equal((await h.request({ method: 'POST', url: '/v2/create-web-call', key: other.apiKey, body: { agent_id: otherAgent } })).status, 201);
      h.clock.set(DAY0 + 3 * DAY);
    });
    after(() => h.close());

    const stats = async (query: string) => {
      const res = await h.request({ method: 'GET', url: `/v2/call-stats${query}`, key });
      assert.equal(res.status, 200, res.raw);
      return res.json;
    };

    it('counts calls per day by status and outcome, with reply latency percentiles; empty days listed', async () => {
      const body = await stats(`?from=${DAY0}&to=${DAY0 + 3 * DAY}`);
      assert.equal(body.from, DAY0);
      assert.equal(body.utc_offset_minutes, 0);
      assert.deepEqual(body.days.map((d: any) => d.date), ['2026-03-10', '2026-03-11', '2026-03-12']);
      const [d0, d1, d2] = body.days;
      assert.equal(d0.start_timestamp, DAY0);
      assert.equal(d0.calls, 4);
      assert.deepEqual(d0.by_status, { registered: 0, ongoing: 0, ended: 3, error: 1 });
      assert.equal(d0.successful, 2);
      assert.equal(d0.unsuccessful, 1);
      // 100..1000 ms over ten replies: p50 = 550, p90 = 910 (linear interpolation).
      assert.deepEqual(d0.e2e_latency_ms, { p50: 550, p90: 910, num: 10 });
      assert.deepEqual({ calls: d1.calls, latency: d1.e2e_latency_ms }, { calls: 0, latency: { p50: null, p90: null, num: 0 } });
      assert.deepEqual({ calls: d2.calls, registered: d2.by_status.registered }, { calls: 1, registered: 1 });
    });

    it('filters by agent', async () => {
      const body = await stats(`?from=${DAY0}&to=${DAY0 + 3 * DAY}&agent_id=${agentB}`);
      assert.deepEqual(body.days.map((d: any) => d.calls), [1, 0, 1]);
      assert.equal(body.days[0].e2e_latency_ms.num, 0);
    });

    it('cuts days at the given UTC offset', async () => {
      // At UTC+01:00 the day-2 call (00:30 UTC) is on day 2 at 01:30; at UTC-01:00 it is day 1 at 23:30.
      const minus = await stats(`?from=${DAY0 + 3_600_000}&to=${DAY0 + 3 * DAY + 3_600_000}&utc_offset_minutes=-60`);
      assert.deepEqual(minus.days.map((d: any) => [d.date, d.calls]), [['2026-03-10', 4], ['2026-03-11', 1], ['2026-03-12', 0]]);
      assert.equal(minus.days[0].start_timestamp, DAY0 + 3_600_000);
      const plus = await stats(`?from=${DAY0 - 3_600_000}&to=${DAY0 + 3 * DAY - 3_600_000}&utc_offset_minutes=60`);
      assert.deepEqual(plus.days.map((d: any) => [d.date, d.calls]), [['2026-03-10', 4], ['2026-03-11', 0], ['2026-03-12', 1]]);
    });

    it('defaults to the last 14 days up to now', async () => {
      const body = await stats('');
      assert.equal(body.to, DAY0 + 3 * DAY);
      assert.equal(body.from, DAY0 + 3 * DAY - 14 * DAY);
      assert.equal(body.days.length, 14);
      assert.equal(body.days.reduce((n: number, d: any) => n + d.calls, 0), 5);
    });

    it('refuses a reversed or too long range, a bad offset or a stray parameter with 400; needs a key', async () => {
      for (const query of [`?from=${DAY0}&to=${DAY0}`, `?from=${DAY0}&to=${DAY0 + 93 * DAY}`, '?utc_offset_minutes=900', '?from=yesterday', '?limit=3']) {
        const res = await h.request({ method: 'GET', url: `/v2/call-stats${query}`, key });
        assert.equal(res.status, 400, query);
      }
      assert.equal((await h.request({ method: 'GET', url: '/v2/call-stats' })).status, 401);
    });
  });
}
