// An agent's end-of-turn settings (responsiveness as Retell, minimum / maximum end-of-turn
// silence, preemptive replies): defaults, validated on create, update and per-call override, stored per version.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`agent end-of-turn settings on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => h.request({ method, url, key, body });

    it('default to responsiveness 1, 250 ms and 1200 ms; are stored per version and validated', async () => {
      const flow = (await req('POST', '/create-conversation-flow', sampleFlow())).json;
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
      const created = await req('POST', '/create-agent', { response_engine: engine });
      assert.equal(created.status, 201);
      const pick = (j: Record<string, unknown>) => [j.responsiveness, j.end_of_turn_min_silence_ms, j.end_of_turn_max_silence_ms, j.preemptive_replies];
      assert.deepEqual(pick(created.json), [1, 250, 1200, true]);
      const id = created.json.agent_id;
      const v2 = await req('PATCH', `/update-agent/${id}`, { responsiveness: 0.4, end_of_turn_min_silence_ms: 400, end_of_turn_max_silence_ms: 2000, preemptive_replies: false });
      assert.equal(v2.status, 200);
      assert.deepEqual(pick(v2.json), [0.4, 400, 2000, false]);
      assert.deepEqual(pick((await req('GET', `/get-agent/${id}`)).json), [0.4, 400, 2000, false]);
      assert.deepEqual(pick((await req('GET', `/get-agent/${id}?version=1`)).json), [1, 250, 1200, true]);

      const bad: Array<[string, unknown]> = [
        ['responsiveness', 1.5], ['responsiveness', -0.1], ['responsiveness', 'high'],
        ['end_of_turn_min_silence_ms', 50], ['end_of_turn_min_silence_ms', 2001], ['end_of_turn_min_silence_ms', 300.5],
        ['end_of_turn_max_silence_ms', 100], ['end_of_turn_max_silence_ms', 5001],
        ['preemptive_replies', 'yes'], ['preemptive_replies', 1],
      ];
      for (const [field, value] of bad) {
        const res = await req('PATCH', `/update-agent/${id}`, { [field]: value });
        assert.equal(res.status, 400, `${field}=${JSON.stringify(value)} -> ${res.status}`);
        assert.match(JSON.stringify(res.json), new RegExp(field));
      }
      const call = await req('POST', '/v2/create-web-call', { agent_id: id, agent_override: { agent: { responsiveness: 2 } } });
      assert.equal(call.status, 400);
      assert.match(JSON.stringify(call.json), /responsiveness/);
      const ok = await req('POST', '/v2/create-web-call', { agent_id: id, agent_override: { agent: { responsiveness: 0, end_of_turn_max_silence_ms: 3000, preemptive_replies: true } } });
      assert.equal(ok.status, 201);
    });
  });
}
