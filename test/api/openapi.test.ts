/**
 * The OpenAPI document as generators need it: every operation with a camelCase, unique
 * `operationId`, one described tag and a summary; named component schemas whose examples are valid
 * under the server's own schemas; `servers` from PUBLIC_BASE_URL; no internal routes; and
 * Redocly's recommended rules (@redocly/openapi-core, the engine of `redocly lint`) with 0 errors.
 * The document does not depend on the store, so this runs on SQLite only.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import Fastify from 'fastify';
import swagger from '@fastify/swagger';
import { API_TAGS, openApiOptions, operation, operationProblems } from '../../src/http/openapi.ts';
import { GUIDES } from '../../src/http/routes/docs.routes.ts';
import { AgentResponse, ConversationFlowResponse, ServiceLlmResponse } from '../../src/http/schemas/agent.schemas.ts';
import { CallResponse, CreateWebCallBody } from '../../src/http/schemas/call.schemas.ts';
import { ErrorResponse } from '../../src/http/schemas/common.schemas.ts';
import { WebhookResponse } from '../../src/http/schemas/webhook.schemas.ts';
import { LeadResponse } from '../../src/services/lead.service.ts';
import { TicketResponse } from '../../src/services/ticket.service.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

const DEMO_KEY = `sb_${'a'.repeat(43)}`;
const PUBLIC_BASE_URL = 'https://voice.acme.dev';

/** The component schemas with examples, and the server schema each example must satisfy. */
const EXAMPLE_SCHEMAS: Record<string, TSchema> = {
  Call: CallResponse,
  Agent: AgentResponse,
  ConversationFlow: ConversationFlowResponse,
  ServiceLlm: ServiceLlmResponse,
  Webhook: WebhookResponse,
  Lead: LeadResponse,
  Ticket: TicketResponse,
  Error: ErrorResponse,
  CreateWebCallRequest: CreateWebCallBody,
};

describe('the OpenAPI document', () => {
  let h: Harness;
  let document: any;
  before(async () => {
    // The demo on, so its routes exist and must still be left out.
    h = await startHarness('sqlite', { DEMO_API_KEY: DEMO_KEY, PUBLIC_BASE_URL });
    const response = await h.request({ method: 'GET', url: '/openapi.json' });
    assert.equal(response.status, 200);
    document = response.json;
  });
  after(() => h?.close());

  it('gives every operation a camelCase unique operationId, one described tag and a summary', () => {
    assert.deepEqual(operationProblems(document), []);
    const operationIds = Object.values(document.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId));
    for (const id of ['createWebCall', 'getCall', 'listCalls', 'updateCall', 'deleteCall', 'createAgent', 'getAgentVersions', 'createConversationFlow', 'createServiceLlm', 'setWebhook', 'listWebhookDeliveries', 'redeliverWebhook', 'createLead', 'listTickets']) {
      assert.ok(operationIds.includes(id), id);
    }
    assert.deepEqual(document.tags.map((t: { name: string }) => t.name), Object.keys(API_TAGS));
    for (const tag of document.tags) assert.ok(tag.description.length > 20, tag.name);
  });

  it('names the wire shapes as components and refers to them', () => {
    const names = Object.keys(document.components.schemas);
    for (const name of ['Call', 'Agent', 'ConversationFlow', 'ServiceLlm', 'Webhook', 'WebhookDelivery', 'Lead', 'Ticket', 'Error', 'CreateWebCallRequest', 'CallPage']) {
      assert.ok(names.includes(name), name);
    }
    const createWebCall = document.paths['/v2/create-web-call'].post;
    assert.deepEqual(createWebCall.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/CreateWebCallRequest' });
    assert.deepEqual(createWebCall.responses['201'].content['application/json'].schema, { $ref: '#/components/schemas/Call' });
    assert.deepEqual(createWebCall.responses['422'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
    // A component is the server's schema itself (@fastify/swagger writes `const` as `enum`): one source.
    assert.deepEqual(Object.keys(document.components.schemas.Call.properties), Object.keys(CallResponse.properties));
    assert.deepEqual(document.components.schemas.Call.required, CallResponse.required);
  });

  it("has examples that the server's own schemas accept", () => {
    // Ajv, as Fastify validates (TypeBox's own checker does not know the `Unsafe` nullable types).
    const ajv = new Ajv({ strict: false });
    for (const [name, schema] of Object.entries(EXAMPLE_SCHEMAS)) {
      const examples = document.components.schemas[name].examples;
      assert.ok(Array.isArray(examples) && examples.length === 1, `${name} has an example`);
      const validate = ajv.compile(schema);
      assert.ok(validate(examples[0]), `${name}'s example: ${JSON.stringify(validate.errors)}`);
    }
  });

  it('lists servers from PUBLIC_BASE_URL, the API key scheme, and leaves out internal and duplicate routes', () => {
    assert.deepEqual(document.servers.map((s: { url: string }) => s.url), [PUBLIC_BASE_URL]);
    assert.equal(document.components.securitySchemes.apiKey.scheme, 'bearer');
    const paths = Object.keys(document.paths);
    assert.deepEqual(paths.filter((p) => p.startsWith('/demo') || p.startsWith('/sdk') || p.startsWith('/web') || p === '/dashboard' || p === '/healthz' || p === '/openapi.json'), []);
    assert.ok(!paths.includes('/v3/create-web-call'), 'the v3 duplicate of createWebCall is served but not documented');
    assert.ok(paths.includes('/v2/create-web-call'));
  });

  it("passes Redocly's recommended rules with 0 errors and 0 warnings (the license rule aside)", async () => {
    // One rule off: info-license-strict wants an SPDX identifier or URL, and the project has not
    // chosen a license yet (the document says so). Turn it back on with the license.
    const config = await createConfig({ extends: ['recommended'], rules: { 'info-license-strict': 'off' } });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
    const listed = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`);
    assert.deepEqual(listed, []);
  });

  it('links the guides, which /docs/guides serves as text under the docs page headers', async () => {
    for (const name of Object.keys(GUIDES)) assert.match(document.info.description, new RegExp(`\\]\\(/docs/guides/${name}\\.md\\)`), name);
    const guide = await h.request({ method: 'GET', url: '/docs/guides/webhooks.md' });
    assert.equal(guide.status, 200);
    assert.match(String(guide.headers['content-type']), /^text\/plain; charset=utf-8/);
    assert.equal(guide.raw, fs.readFileSync(path.join(import.meta.dirname, '../../docs/webhooks.md'), 'utf8'));
    assert.match(String(guide.headers['content-security-policy']), /default-src 'self'/);
    for (const url of ['/docs/guides/nope.md', '/docs/guides/..%2Fpackage.json', '/docs/guides/webhooks']) {
      const missing = await h.request({ method: 'GET', url });
      assert.equal(missing.status, 404, url);
      assert.equal(missing.json.code, 'route_not_found', url);
    }
  });

  it('flags a route registered without operation(): the check can fail', async () => {
    const app = Fastify();
    await app.register(swagger, openApiOptions('http://127.0.0.1:1'));
    app.get('/with', { schema: operation({ operationId: 'getWith', tags: ['calls'], summary: 'Documented' }) }, async () => ({}));
    app.get('/without', { schema: { tags: ['calls'] } }, async () => ({}));
    app.get('/untagged', { schema: { operationId: 'getWith', summary: 'Twice' } }, async () => ({}));
    await app.ready();
    const problems = operationProblems(app.swagger() as never);
    await app.close();
    assert.deepEqual(problems, [
      'GET /without: no camelCase operationId',
      'GET /without: no summary',
      "GET /untagged: operationId getWith is also GET /with's",
      `GET /untagged: needs exactly one tag of ${Object.keys(API_TAGS).join(', ')}`,
    ]);
  });
});
