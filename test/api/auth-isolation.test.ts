import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { API_ROUTES, type Fixture, makeFixture, tableCounts } from '../helpers/routes.ts';
import { STORES } from '../helpers/stores.ts';
import { AccountService } from '../../src/services/account.service.ts';
import { AccountRepository } from '../../src/storage/account.repository.ts';

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
        ['no space', { authorization: `Bearer${keyA}` }],
        ['a tab', { authorization: `Bearer\t${keyA}` }],
        ['a second token', { authorization: `Bearer ${keyA} x` }],
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

    it('takes the Bearer scheme in any case and with several spaces (RFC 9110 11.1, 11.4), on the store and from the key cache', async () => {
      const accounts = h.runtime.services.accounts;
      for (const value of [`bearer ${keyA}`, `BEARER ${keyA}`, `BeArEr ${keyA}`, `Bearer  ${keyA}`]) {
        const res = await h.request({ method: 'GET', url: '/list-agents', headers: { authorization: value } });
        assert.equal(res.status, 200, value.slice(0, 10));
      }
      // A fresh service (empty cache): the store answers the first time, the cache the second.
      const fresh = new AccountService({ store: h.runtime.store, accounts: new AccountRepository(h.runtime.store.db), clock: h.clock, defaultRateLimitPerMinute: 600, keyCacheTtlMs: 60_000 });
      const principal = await fresh.authenticate(`bearer ${keyA}`);
      assert.deepEqual(fresh.cachedPrincipal(`BEARER ${keyA}`), principal);
      assert.deepEqual(fresh.cachedPrincipal(`Bearer ${keyA}`), principal);
      assert.equal(fresh.cachedPrincipal(`Basic ${keyA}`), undefined);
      assert.equal(accounts.cachedPrincipal(`bearer sb_${'A'.repeat(43)}`), undefined);
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
