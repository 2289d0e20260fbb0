/**
 * The /demo page's own limits: per client address and calls at once, 429 with Retry-After beyond
 * them, and never a call taken from the operator's create-web-call budget.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { clientKey } from '../../src/http/demo-admission.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { assertErrorBody } from '../helpers/raw-http.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`the demo's limits on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    const apps: FastifyInstance[] = [];

    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey; // the default 600 create-web-call requests a minute
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(async () => {
      for (const app of apps) await app.close();
      await h?.close();
    });

    /** An app over the same runtime with the operator key as DEMO_API_KEY and these settings. */
    const demoApp = async (settings: Partial<Config> = {}) => {
      const app = await buildApp({ ...h.runtime, config: { ...h.config, demoApiKey: key, ...settings } });
      apps.push(app);
      return app;
    };
    const demoCall = (app: FastifyInstance, remoteAddress = '203.0.113.7', headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: '/demo/api/calls', payload: { agent_id: agentId }, remoteAddress, headers });
    const operatorCall = () => h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
    const assertRefused = (response: LightMyRequestResponse, code: string) => {
      assertErrorBody({ status: response.statusCode, headers: response.headers, body: response.body }, 429, code);
      const retryAfter = Number(response.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${response.headers['retry-after']}`);
      return retryAfter;
    };
    const refusals = async (app: FastifyInstance, reason: string) => {
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      return Number(new RegExp(`switchboard_demo_refusals_total\\{reason="${reason}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };

    it("takes nothing from the operator's budget: 700 demo calls, then the operator's create-web-call still succeeds", async () => {
      const app = await demoApp({ demoRateLimitPerMinute: 10_000, demoMaxConcurrentCalls: 10_000 });
      const statuses = new Map<number, number>();
      for (let batch = 0; batch < 700; batch += 50) {
        const responses = await Promise.all(Array.from({ length: 50 }, () => demoCall(app)));
        for (const r of responses) statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
      }
      assert.deepEqual([...statuses], [[201, 700]]);
      const operator = await operatorCall();
      assert.equal(operator.status, 201, operator.raw);
    });

    it('with the default limits, 700 anonymous calls from one address get 10 calls and 690 x 429; the operator is unaffected', async () => {
      const app = await demoApp();
      const before = await refusals(app, 'rate_limited');
      const responses = [];
      for (let i = 0; i < 700; i++) responses.push(await demoCall(app, '198.51.100.1'));
      assert.equal(responses.filter((r) => r.statusCode === 201).length, 10);
      for (const refused of responses.filter((r) => r.statusCode !== 201)) assertRefused(refused, 'demo_rate_limited');
      assert.equal((await refusals(app, 'rate_limited')) - before, 690, 'counted on /metrics');
      assert.equal((await operatorCall()).status, 201);
    });

    it('limits each client address on its own, refilling continuously; X-Forwarded-For is ignored unless TRUST_PROXY says so', async () => {
      const app = await demoApp({ demoRateLimitPerMinute: 3, demoMaxConcurrentCalls: 10_000 });
      for (let i = 0; i < 3; i++) assert.equal((await demoCall(app, '192.0.2.1')).statusCode, 201);
      const retryAfter = assertRefused(await demoCall(app, '192.0.2.1'), 'demo_rate_limited');
      assert.equal(retryAfter, 20, 'one call every 20 s at 3 a minute');
      // Another address has its own budget; a forged X-Forwarded-For does not give one.
      assert.equal((await demoCall(app, '192.0.2.2')).statusCode, 201);
      assertRefused(await demoCall(app, '192.0.2.1', { 'x-forwarded-for': '10.9.9.9' }), 'demo_rate_limited');
      // IPv6 clients count by /64; an IPv4-mapped address is its IPv4 one.
      for (let i = 0; i < 3; i++) assert.equal((await demoCall(app, `2001:db8:1:2::${i + 1}`)).statusCode, 201);
      assertRefused(await demoCall(app, '2001:db8:1:2:ffff:ffff:ffff:ffff'), 'demo_rate_limited');
      assert.equal((await demoCall(app, '2001:db8:1:3::1')).statusCode, 201);
      assertRefused(await demoCall(app, '::ffff:192.0.2.1'), 'demo_rate_limited');
      h.clock.advance(20_000);
      assert.equal((await demoCall(app, '192.0.2.1')).statusCode, 201, 'refilled after Retry-After');
      assertRefused(await demoCall(app, '192.0.2.1'), 'demo_rate_limited');

      // Behind a trusted proxy the forwarded address is the client's.
      const proxied = await demoApp({ demoRateLimitPerMinute: 1, demoMaxConcurrentCalls: 10_000, http: { ...h.config.http, trustProxy: ['loopback'] } });
      assert.equal((await demoCall(proxied, '127.0.0.1', { 'x-forwarded-for': '198.51.100.20' })).statusCode, 201);
      assert.equal((await demoCall(proxied, '127.0.0.1', { 'x-forwarded-for': '198.51.100.21' })).statusCode, 201);
      assertRefused(await demoCall(proxied, '127.0.0.1', { 'x-forwarded-for': '198.51.100.21' }), 'demo_rate_limited');
      // ... but not from a proxy it does not trust.
      assert.equal((await demoCall(proxied, '192.0.2.50', { 'x-forwarded-for': '198.51.100.22' })).statusCode, 201);
      assertRefused(await demoCall(proxied, '192.0.2.50', { 'x-forwarded-for': '198.51.100.23' }), 'demo_rate_limited');
    });

    it('caps the demo calls registered or in progress at once; a call that ends or whose token expires frees its place', async () => {
      const app = await demoApp({ demoRateLimitPerMinute: 10_000, demoMaxConcurrentCalls: 3 });
      const before = await refusals(app, 'busy');
      const created = [];
      for (let i = 0; i < 3; i++) {
        const response = await demoCall(app, `192.0.2.${100 + i}`);
        assert.equal(response.statusCode, 201);
        created.push(response.json<{ call_id: string; access_token: string }>());
      }
      const retryAfter = assertRefused(await demoCall(app, '192.0.2.200'), 'demo_busy');
      assert.ok(retryAfter >= 29 && retryAfter <= 30, `until the first token expires (30 s): ${retryAfter}`);
      // Concurrent requests cannot slip past the cap either.
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => demoCall(app, `192.0.2.${210 + i}`)));
      assert.ok(burst.every((r) => r.statusCode === 429));

      // One joins and ends, one is joined and stays: the ended one frees a place (checked at most once a second).
      await h.runtime.services.lifecycle.joinCall(created[0]!.access_token);
      await h.runtime.services.lifecycle.finishCall(created[0]!.call_id, { reason: 'user_hangup' });
      await h.runtime.services.lifecycle.joinCall(created[1]!.access_token);
      h.clock.advance(1_000);
      assert.equal((await demoCall(app, '192.0.2.201')).statusCode, 201);
      assertRefused(await demoCall(app, '192.0.2.202'), 'demo_busy');

      // Unjoined calls whose tokens expired can never start: their places come back.
      h.clock.advance(h.config.accessTokenTtlMs + 1_000);
      assert.equal((await demoCall(app, '192.0.2.203')).statusCode, 201);
      assert.equal((await demoCall(app, '192.0.2.204')).statusCode, 201);
      const busy = assertRefused(await demoCall(app, '192.0.2.205'), 'demo_busy');
      assert.ok(busy >= 1 && busy <= 30, `Retry-After ${busy}`);
      assert.equal((await refusals(app, 'busy')) - before, 13);
      assert.equal((await operatorCall()).status, 201, 'the operator is never capped by the demo');
    });

    it('a refused or failed creation holds no place', async () => {
      const app = await demoApp({ demoRateLimitPerMinute: 10_000, demoMaxConcurrentCalls: 1 });
      for (let i = 0; i < 5; i++) {
        const missing = await app.inject({ method: 'POST', url: '/demo/api/calls', payload: { agent_id: 'agent_doesnotexist' }, remoteAddress: '192.0.2.9' });
        assert.equal(missing.statusCode, 422);
        assert.equal(missing.json().code, 'agent_not_found');
      }
      assert.equal((await demoCall(app, '192.0.2.9')).statusCode, 201);
    });
  });
}

describe('demo limit settings', () => {
  it('are validated and default to 10 a minute per address and 10 calls at once', () => {
    const config = loadConfig({});
    assert.equal(config.demoRateLimitPerMinute, 10);
    assert.equal(config.demoMaxConcurrentCalls, 10);
    assert.throws(() => loadConfig({ DEMO_RATE_LIMIT_PER_MINUTE: '0', DEMO_MAX_CONCURRENT_CALLS: 'many' }), /DEMO_RATE_LIMIT_PER_MINUTE must be an integer.*DEMO_MAX_CONCURRENT_CALLS must be an integer/);
  });

  it('count an IPv6 client by its /64 and an IPv4-mapped one as IPv4', () => {
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6'), clientKey('2001:db8:1:2::1'));
    assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
    assert.equal(clientKey('::ffff:10.0.0.1'), '10.0.0.1');
    assert.equal(clientKey('10.0.0.1'), '10.0.0.1');
    assert.equal(clientKey('not an address'), 'not an address');
  });
});
