// An agent's boosted_keywords (as Retell): validated on create, update and per-call override,
// stored per version, returned as given.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`agent boosted_keywords on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => h.request({ method, url, key, body });

    it('defaults to [], is stored per version and validated (up to 100 non-blank phrases of 1-100 characters)', async () => {
      const flow = (await req('POST', '/create-conversation-flow', sampleFlow())).json;
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
      const created = await req('POST', '/create-agent', { response_engine: engine });
      assert.equal(created.status, 201);
      assert.deepEqual(created.json.boosted_keywords, []);
      const id = created.json.agent_id;
      const v2 = await req('PATCH', `/update-agent/${id}`, { boosted_keywords: ['Switchboard', 'appointment'] });
      assert.equal(v2.status, 200);
      assert.deepEqual(v2.json.boosted_keywords, ['Switchboard', 'appointment']);
      assert.deepEqual((await req('GET', `/get-agent/${id}`)).json.boosted_keywords, ['Switchboard', 'appointment']);
      assert.deepEqual((await req('GET', `/get-agent/${id}?version=1`)).json.boosted_keywords, []);

      for (const bad of [['ok', ''], ['   '], ['x'.repeat(101)], Array.from({ length: 101 }, (_, i) => `w${i}`), 'appointment', [3]]) {
        const res = await req('PATCH', `/update-agent/${id}`, { boosted_keywords: bad });
        assert.equal(res.status, 400, `${JSON.stringify(bad).slice(0, 40)} -> ${res.status}`);
        assert.match(JSON.stringify(res.json), /boosted_keywords/);
      }
      const call = await req('POST', '/v2/create-web-call', { agent_id: id, agent_override: { agent: { boosted_keywords: [''] } } });
      assert.equal(call.status, 400);
    });
  });
}
