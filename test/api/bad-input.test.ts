import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { API_ROUTES, type Fixture, makeFixture, tableCounts } from '../helpers/routes.ts';
import { STORES } from '../helpers/stores.ts';

/** Bodies no route accepts: each must get a 4xx JSON error and write nothing. */
const BAD_BODIES: Array<[string, string, Record<string, string>?]> = [
  ['malformed JSON', '{"agent_id": '],
  ['trailing garbage', '{} x'],
  ['a JSON array', '[]'],
  ['a JSON string', '"hello"'],
  ['null', 'null'],
  ['wrong content type', '{}', { 'content-type': 'text/plain' }],
  ['form content type', 'a=1', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['unknown field', '{"surprise": true}'],
  ['lone surrogate in a field name', '{"\\ud800": 1}'],
  ['NUL in a field name', '{"a\\u0000b": 1}'],
  ['deeply nested', `${'['.repeat(5000)}${']'.repeat(5000)}`],
];

const BAD_IDS: Array<[string, string]> = [
  ['overlong', 'x'.repeat(300)],
  ['odd unicode', encodeURIComponent('call_\u202e\u0000\ud83d\ude00')],
  ['path traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['SQL-ish', encodeURIComponent("' OR 1=1 --")],
];

for (const kind of STORES) {
  describe(`bad input on every route on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let f: Fixture;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
      f = await makeFixture(h, key);
    });
    after(() => h.close());

    const check = (label: string, res: { status: number; json: any; raw: string }) => {
      assert.ok(res.status >= 400 && res.status < 500, `${label}: got ${res.status} ${res.raw.slice(0, 200)}`);
      assert.equal(res.json?.status, 'error', `${label}: not a JSON error: ${res.raw.slice(0, 200)}`);
      assert.equal(typeof res.json.message, 'string', label);
    };

    it('refuses bad bodies with 4xx JSON errors and writes nothing', async () => {
      const before = await tableCounts(h);
      for (const route of API_ROUTES.filter((r) => r.body && r.method !== 'GET')) {
        for (const [name, payload, headers] of BAD_BODIES) {
          const res = await h.request({ method: route.method, url: route.path(f), key, body: payload, headers });
          // list-calls accepts {} and the empty-ish bodies only where valid; everything here is invalid
          check(`${route.method} ${route.path(f)} ${name}`, res);
        }
        const huge = JSON.stringify({ metadata: { blob: 'x'.repeat(1_100_000) } });
        const res = await h.request({ method: route.method, url: route.path(f), key, body: huge });
        check(`${route.method} ${route.path(f)} over 1 MB`, res);
        assert.equal(res.status, 413);
      }
      assert.deepEqual(await tableCounts(h), before);
    });

    it('refuses wrong types field by field', async () => {
      const before = await tableCounts(h);
      const cases: Array<[string, string, unknown]> = [
        ['POST', '/v2/create-web-call', { agent_id: 123 }],
        ['POST', '/v2/create-web-call', { agent_id: '' }],
        ['POST', '/v2/create-web-call', { agent_id: f.agentId, metadata: [] }],
        ['POST', '/v2/create-web-call', { agent_id: f.agentId, agent_override: { agent: { voice_id: 5 } } }],
        ['PATCH', `/v2/update-call/${f.callId}`, { metadata: null }],
        ['PATCH', `/v2/update-call/${f.callId}`, { custom_attributes: 'x' }],
        ['POST', '/v2/list-calls', { limit: '10' }],
        ['POST', '/v2/list-calls', { sort_order: 'sideways' }],
        ['POST', '/create-agent', { response_engine: 'flow' }],
        ['POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: f.flowId }, max_call_duration_ms: 1 }],
        ['POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: f.flowId }, webhook_url: 'ftp://x' }],
        ['POST', '/create-conversation-flow', { start_node_id: 'a', nodes: [] }],
        ['POST', '/create-conversation-flow', { start_node_id: 'a', nodes: [{ id: 'a', type: 'end', instruction: { type: 'static_text' } }] }],
        ['POST', '/create-service-llm', { states: [{ name: 'has space' }] }],
        ['PATCH', `/update-conversation-flow/${f.flowId}`, { nodes: 'none' }],
        ['PATCH', `/update-agent/${f.agentId}`, { interruption_sensitivity: -1 }],
        ['PATCH', `/update-agent/${f.agentId}`, { agent_name: 'a\u0000b' }],
        ['POST', '/v2/create-web-call', { agent_id: 'agent_\u0000' }],
      ];
      for (const [method, url, body] of cases) {
        const res = await h.request({ method, url, key, body });
        check(`${method} ${url} ${JSON.stringify(body).slice(0, 80)}`, res);
        assert.equal(res.status, 400, `${method} ${url} ${JSON.stringify(body)}`);
      }
      assert.deepEqual(await tableCounts(h), before);
    });

    it('refuses empty, overlong and odd ids with 4xx, never 500', async () => {
      const before = await tableCounts(h);
      for (const route of API_ROUTES.filter((r) => r.withId)) {
        for (const [name, id] of [...BAD_IDS, ['empty', '']] as Array<[string, string]>) {
          const res = await h.request({ method: route.method, url: route.withId!(id), key, body: route.body?.(f) });
          check(`${route.method} ${route.withId!('ID')} ${name}`, res);
        }
      }
      assert.equal((await h.request({ method: 'GET', url: `/get-agent/${f.agentId}?version=0`, key })).status, 400);
      assert.equal((await h.request({ method: 'GET', url: `/get-agent/${f.agentId}?version=99999999999`, key })).status, 400);
      assert.equal((await h.request({ method: 'GET', url: `/get-agent/${f.agentId}?other=1`, key })).status, 400);
      assert.deepEqual(await tableCounts(h), before);
    });

    it('stores and returns odd but valid unicode intact', async () => {
      const odd = { name: 'Zoë 🙂 \u202eRTL\u202c 名前', combining: 'e\u0301', control: 'a\u0001b\u007f', replacement: '\ufffd' };
      const res = await h.request({ method: 'PATCH', url: `/v2/update-call/${f.callId}`, key, body: { metadata: odd } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json.metadata, odd);
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${f.callId}`, key });
      assert.deepEqual(got.json.metadata, odd);
    });
  });
}
