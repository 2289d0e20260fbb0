import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`the per-account concurrency limit on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(kind.name);
    });
    after(() => h.close());

    const create = (key: string, agentId: string, headers: Record<string, string> = {}) =>
      h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId }, headers });

    it('counts calls registered or ongoing; beyond the limit 429 concurrency_limit_reached; an ended call frees its place', async () => {
      const { apiKey } = await h.account({ concurrencyLimit: 2 });
      const { agentId } = await createFlowAgent(h, apiKey);
      const first = await create(apiKey, agentId);
      assert.equal(first.status, 201);
      const second = await create(apiKey, agentId, { 'idempotency-key': 'k-2' });
      assert.equal(second.status, 201);
      await h.runtime.services.lifecycle.joinCall(second.json.access_token); // ongoing counts too
      const refused = await create(apiKey, agentId);
      assert.equal(refused.status, 429);
      assert.equal(refused.json.code, 'concurrency_limit_reached');
      assert.match(refused.json.message, /concurrency limit allows \(2\)/);
      assert.equal((await create(apiKey, agentId, { 'idempotency-key': 'k-2' })).json.call_id, second.json.call_id, 'a replay is not a new call');
      assert.equal((await create(apiKey, agentId, { 'idempotency-key': 'k-3' })).status, 429);

      await h.runtime.services.lifecycle.finishCall(first.json.call_id, { reason: 'user_hangup' });
      assert.equal((await create(apiKey, agentId)).status, 201, 'an ended call frees its place');
      assert.equal((await create(apiKey, agentId)).status, 429);
      // Other accounts have no limit unless given one.
      const other = await h.account();
      const { agentId: otherAgent } = await createFlowAgent(h, other.apiKey);
      for (let i = 0; i < 3; i++) assert.equal((await create(other.apiKey, otherAgent)).status, 201);
    });

    it('holds under a concurrent burst', async () => {
      const { apiKey } = await h.account({ concurrencyLimit: 5, rateLimitPerMinute: 1_000 });
      const { agentId } = await createFlowAgent(h, apiKey);
      const answers = await Promise.all(Array.from({ length: 30 }, () => create(apiKey, agentId)));
      assert.equal(answers.filter((a) => a.status === 201).length, 5);
      assert.ok(answers.filter((a) => a.status !== 201).every((a) => a.status === 429 && a.json.code === 'concurrency_limit_reached'));
    });
  });
}
