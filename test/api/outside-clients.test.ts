/**
 * What clients written for Retell's API send: `Content-Type: application/json` with no body,
 * Retell's field names and engine types, Idempotency-Keys with spaces. Through app.inject on both
 * stores; test/api/retell-sdk.test.ts drives the same through Retell's own SDK on a real port.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { assertErrorBody } from '../helpers/raw-http.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`outside clients on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let flowId: string;
    let agentId: string;
    let llmAgentId: string;
    let llmId: string;

    before(async () => {
      // An LLM endpoint configured (never called here) so that service-LLM agents take calls.
      h = await startHarness(kind.name, { LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
      key = (await h.account()).apiKey;
      ({ flowId, agentId } = await createFlowAgent(h, key));
      const llm = await h.request({ method: 'POST', url: '/create-service-llm', key, body: { general_prompt: 'Be brief.', states: [{ name: 'greeting', state_prompt: 'Greet.' }], starting_state: 'greeting' } });
      assert.equal(llm.status, 201, llm.raw);
      llmId = llm.json.llm_id;
      const agent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'service_llm', llm_id: llmId } } });
      llmAgentId = agent.json.agent_id;
    });
    after(() => h?.close());

    /** A request with `Content-Type: application/json` and no body at all, as Retell's SDK sends some. */
    const emptyJson = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string) =>
      h.app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: '' });
    const noBody = (method: 'POST' | 'PATCH', url: string) => h.app.inject({ method, url, headers: { authorization: `Bearer ${key}` } });
    const errorOf = (response: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, code: string) =>
      assertErrorBody({ status: response.statusCode, headers: response.headers, body: response.body }, status, code);

    it('accepts an empty JSON body where the route needs none: deletes, lists, updates', async () => {
      const call = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const list = await emptyJson('POST', '/v2/list-calls');
      assert.equal(list.statusCode, 200, list.body);
      assert.ok(list.json().some((c: { call_id: string }) => c.call_id === call.json.call_id));
      assert.equal((await noBody('POST', '/v2/list-calls')).statusCode, 200, 'and no body without a Content-Type');
      for (const url of ['/v3/list-calls', '/v2/list-agents']) {
        const page = await emptyJson('POST', url);
        assert.equal(page.statusCode, 200, `${url}: ${page.body}`);
        assert.equal(typeof page.json().has_more, 'boolean');
      }
      const updated = await emptyJson('PATCH', `/v2/update-call/${call.json.call_id}`);
      assert.equal(updated.statusCode, 200, updated.body);
      assert.equal(updated.json().call_id, call.json.call_id);
      assert.equal((await emptyJson('GET', `/v2/get-call/${call.json.call_id}`)).statusCode, 200);
      assert.equal((await emptyJson('DELETE', `/v2/delete-call/${call.json.call_id}`)).statusCode, 204);

      const spare = await createFlowAgent(h, key);
      assert.equal((await emptyJson('DELETE', `/delete-agent/${spare.agentId}`)).statusCode, 204);
      assert.equal((await emptyJson('DELETE', `/delete-conversation-flow/${spare.flowId}`)).statusCode, 204);
      const llm = await h.request({ method: 'POST', url: '/create-service-llm', key, body: { general_prompt: 'x' } });
      assert.equal((await emptyJson('DELETE', `/delete-service-llm/${llm.json.llm_id}`)).statusCode, 204);
      assert.equal((await emptyJson('PATCH', `/update-agent/${agentId}`)).statusCode, 200, 'an update with no changes');
    });

    it('still refuses a missing body where the route has required fields, with our body', async () => {
      for (const [method, url] of [['POST', '/v2/create-web-call'], ['POST', '/create-agent'], ['POST', '/create-conversation-flow'], ['POST', '/api/v1/webhooks/set.php']] as const) {
        errorOf(await emptyJson(method, url), 400, 'invalid_json');
        errorOf(await noBody(method, url), 400, 'invalid_json');
      }
      errorOf(await h.app.inject({ method: 'POST', url: '/v2/list-calls', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: ' ' }), 400, 'invalid_json');
    });

    it("takes Retell's spellings as input and answers with ours", async () => {
      const created = await h.request({
        method: 'POST',
        url: '/v2/create-web-call',
        key,
        body: { agent_id: llmAgentId, retell_llm_dynamic_variables: { name: 'Ada' }, agent_override: { retell_llm: { general_prompt: 'Be terse.' } } },
      });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(created.json.service_llm_dynamic_variables, { name: 'Ada' });
      const stored = await h.runtime.services.calls.readCall(created.json.call_id);
      assert.deepEqual(stored?.agent_override, { service_llm: { general_prompt: 'Be terse.' } });
      assert.doesNotMatch(created.raw, /retell/i, 'never emitted');
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${created.json.call_id}`, key });
      assert.doesNotMatch(got.raw, /retell/i);

      const both = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: llmAgentId, retell_llm_dynamic_variables: {}, service_llm_dynamic_variables: {} } });
      assertErrorBody({ status: both.status, headers: both.headers, body: both.raw }, 400, 'invalid_request');
      assert.match(both.json.message, /retell_llm_dynamic_variables and service_llm_dynamic_variables/);
      const bothOverrides = await h.request({ method: 'POST', url: '/v3/create-web-call', key, body: { agent_id: llmAgentId, agent_override: { retell_llm: {}, service_llm: {} } } });
      assert.equal(bothOverrides.status, 400);
      assert.match(bothOverrides.json.message, /agent_override has both retell_llm and service_llm/);

      const llmAgent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'retell-llm', llm_id: llmId } } });
      assert.equal(llmAgent.status, 201, llmAgent.raw);
      assert.deepEqual(llmAgent.json.response_engine, { type: 'service_llm', llm_id: llmId });
      const flowAgent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'conversation-flow', conversation_flow_id: flowId } } });
      assert.deepEqual(flowAgent.json.response_engine, { type: 'conversation_flow', conversation_flow_id: flowId });
      const switched = await h.request({ method: 'PATCH', url: `/update-agent/${flowAgent.json.agent_id}`, key, body: { response_engine: { type: 'retell-llm', llm_id: llmId } } });
      assert.equal(switched.status, 200, switched.raw);
      assert.deepEqual(switched.json.response_engine, { type: 'service_llm', llm_id: llmId });
      const versions = await h.request({ method: 'GET', url: `/get-agent-versions/${flowAgent.json.agent_id}`, key });
      assert.doesNotMatch(versions.raw, /retell|conversation-flow/);
      // Retell's custom LLM is ours too (docs/custom-llm.md).
      const custom = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://llm.example.com/ws' } } });
      assert.equal(custom.status, 201, custom.raw);
      assert.deepEqual(custom.json.response_engine, { type: 'custom_llm', llm_websocket_url: 'wss://llm.example.com/ws' });
    });

    it('an aliased body is the same request as ours for an Idempotency-Key', async () => {
      const headers = { 'idempotency-key': 'alias replay' };
      const first = await h.request({ method: 'POST', url: '/v2/create-web-call', key, headers, body: { agent_id: llmAgentId, retell_llm_dynamic_variables: { a: '1' } } });
      const second = await h.request({ method: 'POST', url: '/v2/create-web-call', key, headers, body: { agent_id: llmAgentId, service_llm_dynamic_variables: { a: '1' } } });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.equal(second.headers['idempotent-replayed'], 'true');
      assert.equal(second.json.call_id, first.json.call_id);
    });

    it('takes an Idempotency-Key of 1 to 255 printable ASCII characters, space included, as documented', async () => {
      const create = (idempotencyKey: string) =>
        h.request({ method: 'POST', url: '/v2/create-web-call', key, headers: { 'idempotency-key': idempotencyKey }, body: { agent_id: agentId } });
      const accepted = ['order 42', 'x', '~'.repeat(255), ' !"#$%&\'()*+,-./0123456789:;<=>?@[\\]^_`{|}~ '.trim(), 'a'.repeat(254) + ' b'.slice(1)];
      for (const value of accepted) {
        const first = await create(value);
        assert.equal(first.status, 201, `${JSON.stringify(value.slice(0, 20))}: ${first.raw}`);
        const again = await create(value);
        assert.equal(again.json.call_id, first.json.call_id, 'a retry replays');
      }
      for (const [label, value] of [['256 characters', 'k'.repeat(256)], ['a tab', 'a\tb'], ['non-ASCII', 'caf\u00e9'], ['empty', '']] as const) {
        const refused = await create(value);
        assertErrorBody({ status: refused.status, headers: refused.headers, body: refused.raw }, 400, 'invalid_request', label);
        assert.match(refused.json.message, /1 to 255 printable ASCII characters/);
      }
    });
  });
}
