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
      // An LLM endpoint is configured (never called here) so service-LLM agents may take calls.
      h = await startHarness(kind.name, { LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
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

    it('validates every create-web-call body rule', async () => {
      const llm = await h.request({ method: 'POST', url: '/create-service-llm', key, body: { states: [{ name: 'intro' }, { name: 'closing' }], starting_state: 'intro' } });
      const llmAgent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'service_llm', llm_id: llm.json.llm_id } } });
      const llmAgentId = llmAgent.json.agent_id;
      const cases: Array<[string, unknown, number, RegExp?]> = [
        ['no agent_id', {}, 400, /agent_id/],
        ['unknown agent', { agent_id: 'agent_00000000000000000000000000000000' }, 422],
        ['agent_version not an integer', { agent_id: agentId, agent_version: '1' }, 400],
        ['agent_version 1.5', { agent_id: agentId, agent_version: 1.5 }, 400],
        ['agent_version that does not exist', { agent_id: agentId, agent_version: 7 }, 422, /version 7/],
        ['unknown top-level field', { agent_id: agentId, llm_dynamic_variables: {} }, 400, /unknown field: llm_dynamic_variables/],
        ['unknown override part', { agent_id: agentId, agent_override: { voice: {} } }, 400, /unknown field: voice/],
        ['override with a bad field value', { agent_id: agentId, agent_override: { agent: { interruption_sensitivity: 2 } } }, 400],
        ['override of the other engine', { agent_id: agentId, agent_override: { service_llm: { model: 'x' } } }, 400, /service-LLM agents/],
        ['dynamic variable not a string', { agent_id: agentId, service_llm_dynamic_variables: { n: 1 } }, 400],
        ['metadata not an object', { agent_id: agentId, metadata: 'x' }, 400],
        ['current_node_id not in the flow', { agent_id: agentId, current_node_id: 'nope' }, 400, /"nope" is not a node/],
        ['current_node_id on an LLM agent', { agent_id: llmAgentId, current_node_id: 'greet' }, 400, /conversation flow/],
        ['current_state not a state', { agent_id: llmAgentId, current_state: 'nope' }, 400, /"nope" is not a state/],
        ['current_state on a flow agent', { agent_id: agentId, current_state: 'intro' }, 400, /service LLM/],
      ];
      for (const [name, body, status, message] of cases) {
        const res = await create(body);
        assert.equal(res.status, status, `${name}: ${res.raw}`);
        assert.equal(res.json.status, 'error', name);
        if (message) assert.match(res.json.message, message, name);
      }
      const good = await create({
        agent_id: llmAgentId,
        current_state: 'closing',
        service_llm_dynamic_variables: { name: 'Ada' },
        agent_override: { agent: { data_storage_setting: 'everything_except_pii', agent_name: 'Override' }, service_llm: { model_temperature: 0.1 } },
      });
      assert.equal(good.status, 201, good.raw);
      assert.equal(good.json.current_state, 'closing');
      assert.equal(good.json.data_storage_setting, 'everything_except_pii');
      assert.equal(good.json.agent_name, 'Override');
      assert.deepEqual(good.json.service_llm_dynamic_variables, { name: 'Ada' });
      // the override applied to that call only
      assert.equal((await h.request({ method: 'GET', url: `/get-agent/${llmAgentId}`, key })).json.agent_name, null);
    });

    it('answers 402 from the moment the trial ends', async () => {
      const endsAt = h.clock.now() + 60_000;
      const trial = await h.account({ trialEndsAt: endsAt });
      const { agentId: trialAgent } = await createFlowAgent(h, trial.apiKey);
      h.clock.set(endsAt - 1);
      assert.equal((await create({ agent_id: trialAgent }, trial.apiKey)).status, 201);
      h.clock.set(endsAt);
      const ended = await create({ agent_id: trialAgent }, trial.apiKey);
      assert.equal(ended.status, 402);
      assert.equal(ended.json.code, 'trial_ended');
      assert.equal((await h.request({ method: 'GET', url: '/list-agents', key: trial.apiKey })).status, 200, 'other routes still work');
    });

    it('rate-limits create-web-call per account with a token bucket and Retry-After', async () => {
      const limited = await h.account({ rateLimitPerMinute: 3 });
      const { agentId: a } = await createFlowAgent(h, limited.apiKey);
      for (let i = 0; i < 3; i++) assert.equal((await create({ agent_id: a }, limited.apiKey)).status, 201);
      const refused = await create({ agent_id: a }, limited.apiKey);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['retry-after'], '20');
      // other routes are not counted, and other accounts are not affected
      assert.equal((await h.request({ method: 'POST', url: '/v2/list-calls', key: limited.apiKey, body: {} })).status, 200);
      assert.equal((await create({ agent_id: agentId })).status, 201);
      h.clock.advance(19_999);
      assert.equal((await create({ agent_id: a }, limited.apiKey)).status, 429);
      h.clock.advance(1);
      assert.equal((await create({ agent_id: a }, limited.apiKey)).status, 201);
    });

    it('marks a call whose token expired unused as error_user_not_joined, not before', async () => {
      const { json: call } = await create({ agent_id: agentId });
      const ttl = h.config.accessTokenTtlMs;
      const status = async () => (await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key })).json.call_status;
      h.clock.advance(ttl);
      await h.runtime.services.lifecycle.sweepUnjoined();
      assert.equal(await status(), 'registered', 'valid up to and including the TTL');
      h.clock.advance(1);
      assert.ok((await h.runtime.services.lifecycle.sweepUnjoined()) >= 1);
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key });
      assert.equal(got.json.call_status, 'error');
      assert.equal(got.json.disconnection_reason, 'error_user_not_joined');
      assert.equal(got.json.end_timestamp, h.clock.now());
      await assert.rejects(h.runtime.services.lifecycle.joinCall(call.access_token), /expired/);
    });

    it('lets a token join its call once, within its lifetime', async () => {
      const { json: call } = await create({ agent_id: agentId });
      await assert.rejects(h.runtime.services.lifecycle.joinCall(`${call.access_token}x`), /not valid/);
      h.clock.advance(1000);
      const joined = await h.runtime.services.lifecycle.joinCall(call.access_token);
      assert.equal(joined.call.call_status, 'ongoing');
      assert.equal(joined.call.start_timestamp, h.clock.now());
      await assert.rejects(h.runtime.services.lifecycle.joinCall(call.access_token), /already used/);
      h.clock.advance(h.config.accessTokenTtlMs);
      await h.runtime.services.lifecycle.sweepUnjoined();
      assert.equal((await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key })).json.call_status, 'ongoing', 'a joined call is not swept');
      // update works while ongoing and after the end
      assert.equal((await update(call.call_id, { metadata: { live: true } })).status, 200);
      h.clock.advance(5000);
      assert.equal(await h.runtime.services.lifecycle.finishCall(call.call_id, { reason: 'user_hangup' }), true);
      assert.equal(await h.runtime.services.lifecycle.finishCall(call.call_id, { reason: 'agent_hangup' }), false, 'ends once');
      const ended = await update(call.call_id, { custom_attributes: { tier: 'gold' } });
      assert.equal(ended.status, 200);
      assert.equal(ended.json.call_status, 'ended');
      assert.equal(ended.json.duration_ms, 5000 + h.config.accessTokenTtlMs);
      assert.equal(ended.json.disconnection_reason, 'user_hangup');
      assert.deepEqual(ended.json.metadata, { live: true });
    });

    it('merges override_dynamic_variables as a delta, null removes them; custom_attributes are scalars', async () => {
      const { json: call } = await create({ agent_id: agentId });
      assert.deepEqual((await update(call.call_id, { override_dynamic_variables: { a: '1', b: '2' } })).json.override_dynamic_variables, { a: '1', b: '2' });
      assert.deepEqual((await update(call.call_id, { override_dynamic_variables: { b: '3' } })).json.override_dynamic_variables, { a: '1', b: '3' });
      assert.equal((await update(call.call_id, { override_dynamic_variables: null })).json.override_dynamic_variables, null);
      assert.equal((await update(call.call_id, { override_dynamic_variables: { a: 1 } })).status, 400);
      const attrs = await update(call.call_id, { custom_attributes: { s: 'x', n: 2.5, b: false } });
      assert.deepEqual(attrs.json.custom_attributes, { s: 'x', n: 2.5, b: false });
      for (const bad of [{ o: {} }, { a: [1] }, { z: null }]) assert.equal((await update(call.call_id, { custom_attributes: bad })).status, 400);
      assert.equal((await update(call.call_id, { call_status: 'ended' })).status, 400, 'unknown fields');
      assert.equal((await update(call.call_id, { data_storage_setting: 'nothing' })).status, 400);
      assert.equal((await update('call_00000000000000000000000000000000', {})).status, 422);
      const empty = await update(call.call_id, {});
      assert.equal(empty.status, 200);
      assert.equal(empty.json.call_id, call.call_id);
    });

    it('replays create-web-call for the same Idempotency-Key and body within 24 h', async () => {
      const body = { agent_id: agentId, metadata: { a: 1, b: 2 } };
      const first = await create(body, key, { 'idempotency-key': 'order-77' });
      assert.equal(first.status, 201);
      const again = await create({ metadata: { b: 2, a: 1 }, agent_id: agentId }, key, { 'idempotency-key': 'order-77' });
      assert.equal(again.status, 201);
      assert.equal(again.json.call_id, first.json.call_id);
      assert.equal(again.json.access_token, first.json.access_token);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const different = await create({ agent_id: agentId }, key, { 'idempotency-key': 'order-77' });
      assert.equal(different.status, 409);
      const other = await h.account();
      const { agentId: otherAgent } = await createFlowAgent(h, other.apiKey);
      assert.equal((await create({ agent_id: otherAgent }, other.apiKey, { 'idempotency-key': 'order-77' })).status, 201, 'keys are per account');
      h.clock.advance(24 * 3600 * 1000);
      const later = await create(body, key, { 'idempotency-key': 'order-77' });
      assert.equal(later.status, 201);
      assert.notEqual(later.json.call_id, first.json.call_id);
      assert.equal((await create(body, key, { 'idempotency-key': 'x'.repeat(256) })).status, 400);
    });

    it('lists calls with filters, order, limit and pagination; deletes calls', async () => {
      const fresh = await h.account();
      const { agentId: a1 } = await createFlowAgent(h, fresh.apiKey);
      const { agentId: a2 } = await createFlowAgent(h, fresh.apiKey);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        h.clock.advance(10);
        ids.push((await create({ agent_id: i % 2 ? a2 : a1 }, fresh.apiKey)).json.call_id);
      }
      const list = (body: unknown) => h.request({ method: 'POST', url: '/v2/list-calls', key: fresh.apiKey, body });
      assert.deepEqual((await list({})).json.map((c: any) => c.call_id), [...ids].reverse());
      assert.deepEqual((await list({ sort_order: 'ascending' })).json.map((c: any) => c.call_id), ids);
      const page1 = await list({ sort_order: 'ascending', limit: 2 });
      const page2 = await list({ sort_order: 'ascending', limit: 2, pagination_key: page1.json[1].call_id });
      assert.deepEqual([...page1.json, ...page2.json].map((c: any) => c.call_id), ids.slice(0, 4));
      assert.deepEqual((await list({ filter_criteria: { agent_id: [a2] } })).json.length, 2);
      assert.equal((await list({ filter_criteria: { call_status: ['ongoing'] } })).json.length, 0);
      assert.equal((await list({ limit: 1001 })).status, 400);
      assert.equal((await list({ limit: 0 })).status, 400);
      assert.equal((await list({ pagination_key: 'call_nope' })).status, 400);
      const del = await h.request({ method: 'DELETE', url: `/v2/delete-call/${ids[0]}`, key: fresh.apiKey });
      assert.equal(del.status, 204);
      assert.equal((await h.request({ method: 'GET', url: `/v2/get-call/${ids[0]}`, key: fresh.apiKey })).status, 422);
      assert.equal((await h.request({ method: 'DELETE', url: `/v2/delete-call/${ids[0]}`, key: fresh.apiKey })).status, 422);
    });
  });
}
