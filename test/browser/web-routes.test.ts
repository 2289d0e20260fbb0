/** The web routes without a browser: bundles, pages and their headers, and the demo's server API. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { webRoutes } from '../../src/http/routes/web.routes.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { NOT_BUILT } from './browser.ts';

describe('web routes', () => {
  let h: Harness;
  let operatorKey: string;
  let demo: FastifyInstance;

  before(async () => {
    h = await startHarness('sqlite');
    operatorKey = (await h.account()).apiKey;
    // The same runtime, with the operator key as DEMO_API_KEY.
    demo = await buildApp({ ...h.runtime, config: { ...h.config, demoApiKey: operatorKey } });
  });

  after(async () => {
    await demo?.close();
    await h?.close();
  });

  test('DEMO_API_KEY is validated', () => {
    assert.throws(() => loadConfig({ DEMO_API_KEY: 'secret' }), /DEMO_API_KEY must be an API key/);
    assert.equal(loadConfig({ DEMO_API_KEY: `sb_${'a'.repeat(43)}` }).demoApiKey, `sb_${'a'.repeat(43)}`);
    assert.equal(loadConfig({}).demoApiKey, null);
  });

  test('without DEMO_API_KEY, /demo says how to set it and the demo API is off', async (t) => {
    if (NOT_BUILT) return t.skip(NOT_BUILT);
    const page = await h.request({ method: 'GET', url: '/demo' });
    assert.equal(page.status, 200);
    assert.match(page.raw, /DEMO_API_KEY/);
    assert.match(page.raw, /keys create/);
    const api = await h.request({ method: 'POST', url: '/demo/api/calls', body: { agent_id: 'agent_x' } });
    assert.equal(api.status, 503);
    assert.equal(api.json.code, 'demo_not_configured');
  });

  test('pages and bundles are public, with a strict content security policy', async (t) => {
    if (NOT_BUILT) return t.skip(NOT_BUILT);
    for (const url of ['/demo', '/dashboard']) {
      const response = await demo.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.match(String(response.headers['content-security-policy']), /default-src 'self'/);
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
      assert.equal(response.headers['referrer-policy'], 'no-referrer');
      assert.doesNotMatch(response.body, new RegExp(operatorKey), 'the key never reaches the page');
    }
    const sdk = await demo.inject({ method: 'GET', url: '/sdk/web-sdk.js' });
    assert.equal(sdk.statusCode, 200);
    assert.match(String(sdk.headers['content-type']), /javascript/);
    assert.match(sdk.body, /WebCallClient/);
    for (const url of ['/web/dashboard.js', '/web/demo.js', '/web/app.css']) {
      assert.equal((await demo.inject({ method: 'GET', url })).statusCode, 200, url);
    }
    assert.equal((await demo.inject({ method: 'GET', url: '/web/..%2Fpackage.json' })).statusCode, 404);
    assert.equal((await demo.inject({ method: 'GET', url: '/web/nope.js' })).statusCode, 404);
  });

  test('/docs (Swagger UI), its assets and its JSON carry a content security policy without inline allowances, nosniff, no referrer, no framing', async () => {
    for (const url of ['/docs', '/docs/', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css', '/docs/json']) {
      const response = await h.app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      const csp = String(response.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/, url);
      assert.match(csp, /script-src 'self'(;|$)/, `${url}: scripts from this origin only`);
      assert.match(csp, /frame-ancestors 'none'/, url);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https:|\*/, url);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(response.headers['referrer-policy'], 'no-referrer', url);
      assert.equal(response.headers['x-frame-options'], 'DENY', url);
    }
    // The page itself has no inline script or style for the policy to allow.
    const page = (await h.app.inject({ method: 'GET', url: '/docs' })).body;
    assert.doesNotMatch(page, /<script(?![^>]*\bsrc=)[^>]*>/);
    assert.doesNotMatch(page, /<style|style=/);
    // The other pages keep their own policy; the API does not get a page policy.
    assert.doesNotMatch(String((await h.app.inject({ method: 'GET', url: '/healthz' })).headers['content-security-policy']), /self/);
  });

  test('an unbuilt dist answers 503 saying how to build', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-web-empty-'));
    const Fastify = (await import('fastify')).default;
    const app = Fastify();
    await app.register(webRoutes({ demo: null, distDir: empty }));
    const bundle = await app.inject({ method: 'GET', url: '/sdk/web-sdk.js' });
    assert.equal(bundle.statusCode, 503);
    assert.match(bundle.json().message, /build-web/);
    const page = await app.inject({ method: 'GET', url: '/dashboard' });
    assert.equal(page.statusCode, 503);
    await app.close();
    fs.rmSync(empty, { recursive: true, force: true });
  });

  test('the demo API lists agents and creates calls with the operator key, handing out only the token', async () => {
    const { agentId } = await createFlowAgent(h, operatorKey);
    const agents = await demo.inject({ method: 'GET', url: '/demo/api/agents' });
    assert.equal(agents.statusCode, 200);
    assert.deepEqual(agents.json(), { agents: [{ agent_id: agentId, agent_name: 'Reception', version: 1 }] });

    const created = await demo.inject({ method: 'POST', url: '/demo/api/calls', payload: { agent_id: agentId } });
    assert.equal(created.statusCode, 201);
    assert.deepEqual(Object.keys(created.json()).sort(), ['access_token', 'call_id']);
    const callId = created.json().call_id;

    const call = await demo.inject({ method: 'GET', url: `/demo/api/calls/${callId}` });
    assert.equal(call.statusCode, 200);
    assert.equal(call.json().call_status, 'registered');
    assert.equal(call.json().recording_url, null);

    // Calls the demo did not create are not shown through it.
    const other = await h.request({ method: 'POST', url: '/v2/create-web-call', key: operatorKey, body: { agent_id: agentId } });
    assert.equal((await demo.inject({ method: 'GET', url: `/demo/api/calls/${other.json.call_id}` })).statusCode, 404);
    assert.equal((await demo.inject({ method: 'GET', url: `/demo/api/calls/${other.json.call_id}/recording` })).statusCode, 404);

    // API errors pass through with their codes.
    const missing = await demo.inject({ method: 'POST', url: '/demo/api/calls', payload: { agent_id: 'agent_doesnotexist' } });
    assert.equal(missing.json().status, 'error');
    assert.notEqual(missing.statusCode, 201);
  });
});
