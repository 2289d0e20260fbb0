import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { METADATA_MAX_BYTES } from '../../src/services/call.service.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`call operations on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(() => h.close());

    const create = (body: unknown, k = key, headers?: Record<string, string>) =>
      h.request({ method: 'POST', url: '/v2/create-web-call', key: k, body, headers });
    const update = (callId: string, body: unknown) => h.request({ method: 'PATCH', url: `/v2/update-call/${callId}`, key, body });

    it('creates a registered web call with a token and every field of the call object', async () => {
      const res = await create({ agent_id: agentId, metadata: { order: 42 } });
      assert.equal(res.status, 201);
      const call = res.json;
      assert.match(call.call_id, /^call_[0-9a-f]{32}$/);
      assert.equal(call.call_type, 'web_call');
      assert.equal(call.agent_id, agentId);
      assert.equal(call.agent_version, 1);
      assert.equal(call.call_status, 'registered');
      assert.equal(typeof call.access_token, 'string');
      assert.deepEqual(call.metadata, { order: 42 });
      assert.equal(call.agent_name, 'Reception');
      assert.equal(call.data_storage_setting, 'everything');
      for (const field of ['start_timestamp', 'end_timestamp', 'duration_ms', 'transcript', 'recording_url', 'disconnection_reason', 'call_analysis', 'latency']) {
        assert.ok(field in call, `missing ${field}`);
        assert.equal(call[field], null, field);
      }
      for (const field of ['service_llm_dynamic_variables', 'override_dynamic_variables', 'custom_attributes']) assert.ok(field in call, field);

      const got = await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key });
      assert.equal(got.status, 200);
      assert.equal(got.json.call_id, call.call_id);
      assert.equal(got.json.access_token, undefined, 'the token is only in the creation response');
    });

    it('refuses loosening the storage policy with 400 naming both, accepts same or stricter', async () => {
      const { json: call } = await create({ agent_id: agentId });
      assert.equal((await update(call.call_id, { data_storage_setting: 'everything_except_pii' })).status, 200);
      const loosen = await update(call.call_id, { data_storage_setting: 'everything' });
      assert.equal(loosen.status, 400);
      assert.match(loosen.json.message, /everything_except_pii/);
      assert.match(loosen.json.message, /everything\b/);
      assert.equal((await update(call.call_id, { data_storage_setting: 'everything_except_pii' })).status, 200);
      const stricter = await update(call.call_id, { data_storage_setting: 'basic_attributes_only' });
      assert.equal(stricter.status, 200);
      assert.equal(stricter.json.data_storage_setting, 'basic_attributes_only');
      assert.equal((await update(call.call_id, { data_storage_setting: 'everything_except_pii' })).status, 400);
    });

    it('accepts metadata of exactly 50 KB and refuses one byte more, changing nothing', async () => {
      const { json: call } = await create({ agent_id: agentId });
      const overhead = JSON.stringify({ x: '' }).length;
      const exact = { x: 'a'.repeat(METADATA_MAX_BYTES - overhead) };
      const ok = await update(call.call_id, { metadata: exact });
      assert.equal(ok.status, 200);
      const tooBig = { x: 'a'.repeat(METADATA_MAX_BYTES - overhead + 1) };
      const refused = await update(call.call_id, { metadata: tooBig, custom_attributes: { tier: 'gold' } });
      assert.equal(refused.status, 400);
      const after = await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key });
      assert.equal(after.json.metadata.x.length, exact.x.length);
      assert.equal(after.json.custom_attributes, null, 'atomic: the other field was not applied');
    });
  });
}
