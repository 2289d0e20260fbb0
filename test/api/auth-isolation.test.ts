import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { API_ROUTES, type Fixture, makeFixture, tableCounts } from '../helpers/routes.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`authentication and account isolation on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let keyA: string;
    let keyB: string;
    let a: Fixture;
    before(async () => {
      h = await startHarness(kind.name);
      keyA = (await h.account()).apiKey;
      keyB = (await h.account()).apiKey;
      a = await makeFixture(h, keyA);
      await makeFixture(h, keyB);
    });
    after(() => h.close());

    it('answers 401 on every route without a valid key, before reading the body', async () => {
      const revoked = await h.account();
      const keys = await h.runtime.services.accounts.listKeys(revoked.accountId);
      await h.runtime.services.accounts.revokeKey(keys[0]!.id);
      const headerCases: Array<[string, Record<string, string>]> = [
        ['missing', {}],
        ['not bearer', { authorization: `Basic ${keyA}` }],
        ['malformed', { authorization: 'Bearer sb_short' }],
        ['unknown', { authorization: `Bearer sb_${'A'.repeat(43)}` }],
        ['revoked', { authorization: `Bearer ${revoked.apiKey}` }],
        ['two spaces', { authorization: `Bearer  ${keyA}` }],
      ];
      const before = await tableCounts(h);
      for (const route of API_ROUTES) {
        for (const [name, headers] of headerCases) {
          const res = await h.request({ method: route.method, url: route.path(a), headers, body: route.body ? '{not json' : undefined });
          assert.equal(res.status, 401, `${route.method} ${route.path(a)} ${name}`);
          assert.equal(res.json.status, 'error');
          assert.equal(res.json.code, 'unauthenticated');
        }
      }
      assert.deepEqual(await tableCounts(h), before);
      assert.equal((await h.request({ method: 'GET', url: '/list-agents', key: revoked.apiKey })).status, 401);
    });

    it("refuses another account's ids on every route with 422 and changes nothing", async () => {
      const before = await tableCounts(h);
      for (const route of API_ROUTES.filter((r) => r.withId)) {
        const res = await h.request({ method: route.method, url: route.path(a), key: keyB, body: route.body?.(a) });
        assert.equal(res.status, 422, `${route.method} ${route.path(a)}: ${res.raw}`);
        assert.equal(res.json.status, 'error');
      }
      const call = await h.request({ method: 'POST', url: '/v2/create-web-call', key: keyB, body: { agent_id: a.agentId } });
      assert.equal(call.status, 422);
      const agent = await h.request({
        method: 'POST',
        url: '/create-agent',
        key: keyB,
        body: { response_engine: { type: 'conversation_flow', conversation_flow_id: a.flowId } },
      });
      assert.equal(agent.status, 422);
      const listed = await h.request({ method: 'POST', url: '/v2/list-calls', key: keyB, body: { filter_criteria: { agent_id: [a.agentId] } } });
      assert.deepEqual(listed.json, []);
      assert.equal((await h.request({ method: 'POST', url: '/v2/list-calls', key: keyB, body: { pagination_key: a.callId } })).status, 400);
      for (const url of ['/list-agents', '/list-conversation-flows', '/list-service-llms']) {
        const body = JSON.stringify((await h.request({ method: 'GET', url, key: keyB })).json);
        for (const id of Object.values(a)) assert.ok(!body.includes(id), `${url} leaks ${id}`);
      }
      assert.deepEqual(await tableCounts(h), before);
      // and the owner still sees everything
      assert.equal((await h.request({ method: 'GET', url: `/v2/get-call/${a.callId}`, key: keyA })).status, 200);
    });
  });
}
