/**
 * The Node client's request machinery, in the repository: retries (429 with Retry-After, 5xx,
 * connection errors; X-Should-Retry wins), one Idempotency-Key across the retries of
 * create-web-call, timeouts, error classes, and the backoff's bounds. A fake `fetch` answers, so
 * nothing waits on a real backoff but the one connection-error retry. Against a real server on
 * both stores: every resource's main path, and a missing call rejecting with 422.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  APIConnectionError,
  APITimeoutError,
  BadRequestError,
  InternalServerError,
  RateLimitError,
  Switchboard,
  UnprocessableEntityError,
  retryDelayMs,
} from '../../packages/node/src/index.ts';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

interface Sent {
  method: string;
  url: string;
  headers: Headers;
  body: string | null;
}

/** A fetch that answers from `answers` in turn (a Response, or an Error to throw), recording each request. */
function fakeFetch(answers: Array<Response | Error>): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch = (async (input: URL | RequestInfo, init?: RequestInit) => {
    sent.push({ method: init?.method ?? 'GET', url: input instanceof Request ? input.url : input.toString(), headers: new Headers(init?.headers), body: (init?.body as string | undefined) ?? null });
    const answer = answers.shift();
    if (answer === undefined) throw new Error('no more answers');
    if (answer instanceof Error) throw answer;
    return answer;
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const error = (status: number, code: string, headers: Record<string, string> = {}) => json(status, { status: 'error', code, message: `${code} happened` }, headers);

describe('the Node client: retries, idempotency, timeouts, errors', () => {
  it('retries create-web-call on 503 and 429 (Retry-After) with the same Idempotency-Key', async () => {
    const { fetch, sent } = fakeFetch([error(503, 'storage_unavailable', { 'retry-after': '0' }), error(429, 'rate_limited', { 'retry-after': '0' }), json(201, { call_id: 'call_1' })]);
    const client = new Switchboard({ apiKey: 'sb_test', baseUrl: 'http://switchboard.test/', fetch });
    const call = await client.calls.createWebCall({ agent_id: 'agent_1' });
    assert.equal(call.call_id, 'call_1');
    assert.equal(sent.length, 3);
    const keys = sent.map((s) => s.headers.get('idempotency-key'));
    assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1, 'one key across the retries');
    assert.equal(sent[0]!.url, 'http://switchboard.test/v2/create-web-call');
    assert.equal(sent[0]!.headers.get('authorization'), 'Bearer sb_test');
    assert.deepEqual(JSON.parse(sent[0]!.body!), { agent_id: 'agent_1' });
    // A new call of the method is a new call: a new key.
    const second = fakeFetch([json(201, { call_id: 'call_2' })]);
    await new Switchboard({ apiKey: 'sb_test', fetch: second.fetch }).calls.createWebCall({ agent_id: 'agent_1' });
    assert.notEqual(second.sent[0]!.headers.get('idempotency-key'), keys[0]);
  });

  it("follows X-Should-Retry: false stops a retry, true asks for one; gives up after maxRetries", async () => {
    const refused = fakeFetch([error(503, 'engine_unavailable', { 'x-should-retry': 'false' })]);
    await assert.rejects(new Switchboard({ apiKey: 'k', fetch: refused.fetch }).agents.list(), (e: unknown) => e instanceof InternalServerError && e.status === 503 && e.code === 'engine_unavailable');
    assert.equal(refused.sent.length, 1);

    const asked = fakeFetch([error(400, 'busy', { 'x-should-retry': 'true', 'retry-after': '0' }), json(200, [])]);
    assert.deepEqual(await new Switchboard({ apiKey: 'k', fetch: asked.fetch }).agents.list(), []);
    assert.equal(asked.sent.length, 2);

    const always = fakeFetch([error(429, 'rate_limited', { 'retry-after': '0' }), error(429, 'rate_limited', { 'retry-after': '0' })]);
    await assert.rejects(new Switchboard({ apiKey: 'k', fetch: always.fetch, maxRetries: 1 }).calls.list(), RateLimitError);
    assert.equal(always.sent.length, 2);

    const bad = fakeFetch([error(400, 'invalid_request')]);
    await assert.rejects(new Switchboard({ apiKey: 'k', fetch: bad.fetch }).calls.list(), (e: unknown) => e instanceof BadRequestError && e.message === 'invalid_request happened');
    assert.equal(bad.sent.length, 1, 'a 400 is not retried');
  });

  it('retries a connection error, then rejects with APIConnectionError; a timeout is APITimeoutError', async () => {
    const down = fakeFetch([new TypeError('fetch failed'), new TypeError('fetch failed')]);
    await assert.rejects(new Switchboard({ apiKey: 'k', fetch: down.fetch, maxRetries: 1 }).calls.retrieve('call_1'), (e: unknown) => e instanceof APIConnectionError && !(e instanceof APITimeoutError) && /cannot reach/.test(e.message));
    assert.equal(down.sent.length, 2);

    const hanging = (async (_input: URL | RequestInfo, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason as Error)))) as typeof fetch;
    await assert.rejects(new Switchboard({ apiKey: 'k', fetch: hanging, timeoutMs: 50, maxRetries: 0 }).calls.retrieve('call_1'), APITimeoutError);
  });

  it('waits as Retry-After says (seconds or a date, up to 60 s), else backs off exponentially with jitter', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryDelayMs(1, new Headers({ 'retry-after': '2' })), 2000);
    assert.equal(retryDelayMs(1, new Headers({ 'retry-after': new Date(now + 3000).toUTCString() }), Math.random, now), 3000);
    assert.equal(retryDelayMs(1, new Headers({ 'retry-after': '3600' }), () => 0), 500, 'an hour is not honoured: backoff instead');
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, null, () => 0)), [500, 1000, 2000, 4000, 8000, 8000]);
    assert.deepEqual([1, 2].map((n) => retryDelayMs(n, null, () => 1)), [375, 750], 'up to 25 % jitter');
  });

  it('reads the key and the server from SWITCHBOARD_API_KEY and SWITCHBOARD_BASE_URL, and needs a key', () => {
    const saved = { key: process.env.SWITCHBOARD_API_KEY, url: process.env.SWITCHBOARD_BASE_URL };
    try {
      process.env.SWITCHBOARD_API_KEY = 'sb_env';
      process.env.SWITCHBOARD_BASE_URL = 'https://voice.acme.dev/';
      assert.equal(new Switchboard().baseUrl, 'https://voice.acme.dev');
      delete process.env.SWITCHBOARD_API_KEY;
      assert.throws(() => new Switchboard(), /SWITCHBOARD_API_KEY/);
    } finally {
      if (saved.key === undefined) delete process.env.SWITCHBOARD_API_KEY;
      else process.env.SWITCHBOARD_API_KEY = saved.key;
      if (saved.url === undefined) delete process.env.SWITCHBOARD_BASE_URL;
      else process.env.SWITCHBOARD_BASE_URL = saved.url;
    }
  });
});

for (const kind of STORES) {
  describe(`the Node client against a real server on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let client: Switchboard;
    before(async () => {
      h = await startHarness(kind.name);
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const { apiKey } = await h.account();
      client = new Switchboard({ apiKey, baseUrl: `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}` });
    });
    after(() => h?.close());

    it('flows, LLMs, agents, calls, webhooks, leads and tickets; a missing call is 422', async () => {
      const flow = await client.conversationFlows.create(sampleFlow() as never);
      assert.match(flow.conversation_flow_id, /^cf_/);
      assert.equal((await client.conversationFlows.update(flow.conversation_flow_id, { global_prompt: 'Be brief.' })).global_prompt, 'Be brief.');
      assert.equal((await client.conversationFlows.list()).length, 1);
      const llm = await client.serviceLlms.create({ general_prompt: 'You are kind.' });
      assert.equal((await client.serviceLlms.retrieve(llm.llm_id)).general_prompt, 'You are kind.');
      await client.serviceLlms.delete(llm.llm_id);

      const agent = await client.agents.create({ agent_name: 'Reception', response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } });
      await client.agents.update(agent.agent_id, { agent_name: 'Front desk' });
      assert.deepEqual((await client.agents.versions(agent.agent_id)).map((v) => v.version), [1, 2]);
      assert.equal((await client.agents.retrieve(agent.agent_id, { version: 1 })).agent_name, 'Reception');

      const call = await client.calls.createWebCall({ agent_id: agent.agent_id, metadata: { order: 42 } }, { idempotencyKey: 'order-42' });
      assert.ok(call.access_token);
      const again = await client.calls.createWebCall({ agent_id: agent.agent_id, metadata: { order: 42 } }, { idempotencyKey: 'order-42' });
      assert.equal(again.call_id, call.call_id, 'the same key gives the same call');
      assert.equal((await client.calls.update(call.call_id, { metadata: { order: 43 } })).metadata?.order, 43);
      assert.equal((await client.calls.retrieve(call.call_id)).call_status, 'registered');
      assert.deepEqual((await client.calls.list({ limit: 10 })).map((c) => c.call_id), [call.call_id]);
      await assert.rejects(client.calls.retrieve('call_missing'), (e: unknown) =>
        e instanceof UnprocessableEntityError && e.status === 422 && e.code === 'call_not_found' && /call_missing/.test(e.message));
      await client.calls.delete(call.call_id);

      const webhook = await client.webhooks.set({ url: 'https://hooks.acme.dev/switchboard', events: ['call.finished'] });
      assert.match(webhook.secret ?? '', /^whsec_/);
      assert.deepEqual((await client.webhooks.list()).webhooks.map((w) => w.id), [webhook.id]);
      assert.deepEqual((await client.webhooks.deliveries({ limit: 5 })).deliveries, []);
      assert.match((await client.webhooks.agentSecret()).secret, /^whsec_/);
      assert.deepEqual(await client.webhooks.delete({ id: webhook.id }), { deleted: true, id: webhook.id });

      const lead = await client.leads.create({ name: 'Ada', phone: '+44 20 7946 0000' });
      assert.equal((await client.leads.update({ id: lead.id, notes: 'Called back' })).notes, 'Called back');
      assert.equal((await client.leads.retrieve(lead.id)).name, 'Ada');
      assert.deepEqual((await client.leads.list({ limit: 5 })).leads.map((l) => l.id), [lead.id]);
      const ticket = await client.tickets.create({ subject: 'Reschedule', description: 'Tuesday to Thursday', lead_id: lead.id });
      assert.deepEqual((await client.tickets.list({ lead_id: lead.id })).tickets.map((t) => t.id), [ticket.id]);
    });
  });
}
