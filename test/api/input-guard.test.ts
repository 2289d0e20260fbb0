/**
 * The one rule for strings at the edge (src/http/input-guard.ts) and the integer ranges of the
 * request schemas: the inputs of issue 10's finding 4, refused with 400 naming the field on both
 * stores, and nothing written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_INPUT_DEPTH, findInputProblem } from '../../src/http/input-guard.ts';
import { MAX_EPOCH_MS } from '../../src/domain/schema-kit.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type FullFixture, makeFullFixture, storeFingerprint } from '../helpers/routes.ts';
import { STORES } from '../helpers/stores.ts';

/** An object whose innermost object is `depth` levels below it. */
const nest = (depth: number) => JSON.parse(`${'{"n":'.repeat(depth + 1)}1${'}'.repeat(depth + 1)}`) as object;

describe('findInputProblem', () => {
  it('finds NUL and lone surrogates in values and keys at any depth, naming the path', () => {
    assert.equal(findInputProblem({ a: ['x', { b: 'ok' }], c: 1, d: null, e: true }, 'body'), null);
    assert.equal(findInputProblem('plain', 'querystring'), null);
    assert.deepEqual(findInputProblem({ notes: 'a\u0000b' }, 'body'), { path: 'body/notes', message: 'body/notes must not contain U+0000 (NUL)' });
    assert.equal(findInputProblem({ a: [{ b: ['x', 'y\u0000'] }] }, 'body')?.path, 'body/a/0/b/1');
    assert.equal(findInputProblem({ 'a/b~c': { v: '\ud800' } }, 'body')?.path, 'body/a~1b~0c/v');
    assert.match(findInputProblem({ m: { 'k\u0000': 1 } }, 'body')?.message ?? '', /^body\/m has a field name that must not contain U\+0000/);
    assert.match(findInputProblem({ s: 'x\udc00' }, 'body')?.message ?? '', /^body\/s must be valid Unicode \(it has a lone UTF-16 surrogate\)$/);
    assert.equal(findInputProblem({ emoji: '\u{1f642}', pair: '\ud83d\ude42', replacement: '\ufffd', control: '\u0001' }, 'body'), null);
    assert.equal(findInputProblem('\u0000', 'params')?.path, 'params');
  });

  it(`allows ${MAX_INPUT_DEPTH} levels of nesting and refuses one more, without recursion`, () => {
    assert.equal(findInputProblem(nest(MAX_INPUT_DEPTH), 'body'), null);
    assert.match(findInputProblem(nest(MAX_INPUT_DEPTH + 1), 'body')?.message ?? '', /nests more than 64 levels deep$/);
    const deep = JSON.parse(`${'['.repeat(500_000)}${']'.repeat(500_000)}`) as unknown;
    assert.match(findInputProblem(deep, 'body')?.message ?? '', /^body(\/0){64} nests more than 64 levels deep$/);
    assert.equal(findInputProblem(new Array(300_000).fill('x'), 'body'), null);
  });
});

for (const kind of STORES) {
  describe(`strings and integers at the edge on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let f: FullFixture;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
      f = await makeFullFixture(h, key);
    });
    after(() => h.close());

    /** Sends each request; each must be a 400 invalid_request whose message starts with its field, and write nothing. */
    const refuses = async (cases: Array<[string, string, unknown, string | RegExp]>) => {
      for (const [method, url, body, field] of cases) {
        const before = await storeFingerprint(h);
        h.clock.advance(1);
        const res = await h.request({ method, url, key, body });
        const label = `${method} ${url} ${typeof body === 'string' ? body.slice(0, 80) : JSON.stringify(body)?.slice(0, 80)} -> ${res.status} ${res.raw.slice(0, 200)}`;
        assert.equal(res.status, 400, label);
        assert.equal(res.json.code, 'invalid_request', label);
        if (typeof field === 'string') assert.ok(res.json.message.startsWith(`${field} `), label);
        else assert.match(res.json.message, field, label);
        assert.deepEqual(await storeFingerprint(h), before, `${label}: wrote`);
      }
    };

    it('refuses U+0000 in every free-text field the attack run found, and anywhere else, naming the field', async () => {
      const lead = { name: 'Ada', phone: '555-0100' };
      const ticket = { subject: 's', description: 'd' };
      await refuses([
        ['POST', '/api/v1/leads/create.php', { ...lead, notes: 'call back\u0000' }, 'body/notes'],
        ['POST', '/api/v1/leads/create.php', { ...lead, email: 'ada\u0000@example.com' }, 'body/email'],
        ['POST', '/api/v1/leads/create.php', { name: 'A\u0000da', phone: '555-0100' }, 'body/name'],
        ['POST', '/api/v1/leads/create.php', { ...lead, custom_fields: { plan: 'gold\u0000' } }, 'body/custom_fields/plan'],
        ['POST', '/api/v1/leads/update.php', { id: f.leadId, notes: '\u0000' }, 'body/notes'],
        ['POST', '/api/v1/tickets/create.php', { ...ticket, subject: 'help\u0000' }, 'body/subject'],
        ['POST', '/api/v1/tickets/create.php', { ...ticket, description: 'x\u0000y' }, 'body/description'],
        ['POST', '/api/v1/webhooks/set.php', { url: 'https://example.com/hook\u0000', events: ['*'] }, 'body/url'],
        ['POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: f.flowId }, webhook_url: 'https://example.com/\u0000' }, 'body/webhook_url'],
        ['PATCH', `/update-conversation-flow/${f.flowId}`, { global_prompt: 'Be kind.\u0000' }, 'body/global_prompt'],
        ['POST', '/v2/create-web-call', { agent_id: f.agentId, metadata: { order: { note: 'a\u0000' } } }, 'body/metadata/order/note'],
        ['POST', '/v2/create-web-call', { agent_id: f.agentId, metadata: { 'k\u0000': 1 } }, /^body\/metadata has a field name that must not contain U\+0000/],
        ['PATCH', `/v2/update-call/${f.callId}`, { custom_attributes: { tier: 'x\u0000' } }, 'body/custom_attributes/tier'],
        ['GET', '/api/v1/webhooks/deliveries.php?event_id=evt_%00', undefined, 'querystring/event_id'],
        ['GET', '/api/v1/leads/list.php?zz=%00', undefined, 'querystring/zz'],
        ['GET', '/v2/get-call/call_%00', undefined, 'params/call_id'],
      ]);
    });

    it('refuses lone surrogates and nesting deeper than 64 levels, and accepts what is within the rule', async () => {
      await refuses([
        ['POST', '/api/v1/leads/create.php', { name: 'Ada', phone: '555-0100', notes: 'half an emoji \ud83d' }, 'body/notes'],
        ['POST', '/v2/create-web-call', { agent_id: f.agentId, metadata: { '\udc00': 1 } }, /^body\/metadata has a field name that must be valid Unicode/],
        ['PATCH', `/v2/update-call/${f.callId}`, { metadata: { deep: nest(MAX_INPUT_DEPTH - 1) } }, /^body\/metadata\/deep(\/n)+ nests more than 64 levels deep$/],
        ['POST', '/v2/create-web-call', `{"agent_id":"${f.agentId}","metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, /nests more than 64 levels deep$/],
      ]);
      const metadata = { emoji: '\u{1f642}', deep: nest(MAX_INPUT_DEPTH - 2) };
      const ok = await h.request({ method: 'PATCH', url: `/v2/update-call/${f.callId}`, key, body: { metadata } });
      assert.equal(ok.status, 200, ok.raw);
      assert.deepEqual(ok.json.metadata, metadata);
    });

    it('range-checks integers: epoch-ms thresholds, versions, lead and ticket ids, query integers', async () => {
      const listCalls = (threshold: string) => `{"filter_criteria":{"start_timestamp":{"upper_threshold":${threshold}}}}`;
      await refuses([
        ['POST', '/v2/list-calls', listCalls('9223372036854775808'), 'body/filter_criteria/start_timestamp/upper_threshold'],
        ['POST', '/v2/list-calls', listCalls('1e300'), 'body/filter_criteria/start_timestamp/upper_threshold'],
        ['POST', '/v2/list-calls', listCalls(String(MAX_EPOCH_MS + 1)), 'body/filter_criteria/start_timestamp/upper_threshold'],
        ['POST', '/v2/list-calls', '{"filter_criteria":{"start_timestamp":{"lower_threshold":1e300}}}', 'body/filter_criteria/start_timestamp/lower_threshold'],
        ['POST', '/v2/list-calls', '{"limit":1e300}', 'body/limit'],
        ['POST', '/v2/create-web-call', `{"agent_id":"${f.agentId}","agent_version":1e300}`, 'body/agent_version'],
        ['POST', '/api/v1/leads/update.php', '{"id":1e300,"name":"A"}', 'body/id'],
        ['POST', '/api/v1/leads/update.php', '{"id":9223372036854775808,"name":"A"}', 'body/id'],
        ['POST', '/api/v1/tickets/create.php', '{"subject":"s","description":"d","lead_id":1e300}', /^body\/lead_id /],
        ['PATCH', `/update-agent/${f.agentId}`, '{"max_call_duration_ms":1e300}', 'body/max_call_duration_ms'],
        ['GET', '/api/v1/leads/get.php?id=9999999999999999', undefined, 'querystring/id'],
        ['GET', '/api/v1/leads/get.php?id=1e300', undefined, 'querystring/id'],
        ['GET', '/api/v1/leads/list.php?pagination_key=9223372036854775808', undefined, 'querystring/pagination_key'],
        ['GET', '/api/v1/tickets/list.php?lead_id=99999999999999999999', undefined, 'querystring/lead_id'],
        ['GET', `/get-agent/${f.agentId}?version=2147483648`, undefined, 'querystring/version'],
      ]);
      const latest = await h.request({ method: 'POST', url: '/v2/list-calls', key, body: listCalls(String(MAX_EPOCH_MS)) });
      assert.equal(latest.status, 200, latest.raw);
      assert.equal((await h.request({ method: 'GET', url: '/api/v1/leads/get.php?id=999999999999999', key })).status, 422);
    });
  });
}
