// The hostile-peer suite, what one tenant's peers must not do to others or learn: a function
// backend that never answers holds only its own account's sockets; a destination refusal tells
// the tenant the rule, never what an internal name resolves to; a custom-LLM server that stops
// reading is cut off instead of growing our send buffer; a webhook receiver that drips its answer
// is bounded by the delivery's timeout.
import assert from 'node:assert/strict';
import dns from 'node:dns/promises';
import os from 'node:os';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { systemClock } from '../../src/lib/clock.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { WebhookHttpClient } from '../../src/webhooks/http-client.ts';
import { functionCallerFor } from '../../src/webhooks/function-caller.ts';
import { llmSocketOpener } from '../../src/media/llm-websocket.ts';
import type { LlmSocketEnd } from '../../src/voice/index.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { type MediaServer, fakeProviders, startMediaServer } from '../media/helpers.ts';

describe('one tenant against the others, through custom functions', () => {
  let s: MediaServer;
  let backend: Receiver;
  let callOf: { a: string; b: string };
  let accountB: string;
  before(async () => {
    backend = await Receiver.start();
    s = await startMediaServer('sqlite', { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, providers: fakeProviders([]) });
    const b = await s.runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 1000 });
    accountB = b.account_id;
    const agentA = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' } }] });
    const flowB = await s.api('POST', '/create-conversation-flow', { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' } }] }, b.api_key);
    const agentB = await s.api('POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flowB.json.conversation_flow_id } }, b.api_key);
    const callA = await s.api('POST', '/v2/create-web-call', { agent_id: agentA });
    const callB = await s.api('POST', '/v2/create-web-call', { agent_id: agentB.json.agent_id }, b.api_key);
    callOf = { a: callA.json.call_id, b: callB.json.call_id };
  });
  after(async () => {
    await s?.close();
    await backend?.close();
  });

  const callerWith = (client: WebhookHttpClient) =>
    functionCallerFor({ client, secrets: s.runtime.services.webhooks, calls: s.runtime.services.calls, clock: systemClock, log: createSilentLogger() });

  it("a backend that never answers 20 of one tenant's requests does not delay another tenant's function on the same host", { timeout: 30_000 }, async () => {
    backend.respond = (request) => (request.path === '/hang' ? 'hang' : { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
    // As the runtime builds it: 16 sockets per host:port (per account now).
    const client = new WebhookHttpClient({ policy: new DestinationPolicy(['127.0.0.1/32']), connectTimeoutMs: 1_000, timeoutMs: 10_000 });
    const caller = callerWith(client);
    const stop = new AbortController();
    try {
      const a = caller({ accountId: s.accountId, callId: callOf.a }, stop.signal);
      const stuck = Array.from({ length: 20 }, () => a.call({ name: 'slow', url: backend.url('/hang'), timeout_ms: 20_000 } as never, {}));
      for (const until = Date.now() + 5_000; backend.received.filter((r) => r.path === '/hang').length < 16 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      const b = caller({ accountId: accountB, callId: callOf.b }, new AbortController().signal);
      const t0 = performance.now();
      const answered = await b.call({ name: 'fast', url: backend.url('/fast'), timeout_ms: 2_000 } as never, {});
      const ms = performance.now() - t0;
      assert.equal(answered.ok, true, `the other tenant's function: ${answered.content}`);
      assert.ok(ms < 1_000, `it took ${ms.toFixed(0)} ms`);
      stop.abort();
      await Promise.all(stuck);
    } finally {
      stop.abort();
      client.close();
    }
  });

  it('a function at a name that resolves to this machine is refused, and the tenant is told the rule, not the address', { timeout: 15_000 }, async () => {
    const name = os.hostname();
    const resolved = await dns.lookup(name, { all: true });
    const policy = new DestinationPolicy();
    assert.ok(resolved.some((r) => policy.refusal(r.address) !== null), `this test needs ${name} to resolve to an address the policy refuses (it resolves to ${resolved.map((r) => r.address).join(', ')})`);
    const client = new WebhookHttpClient({ policy, connectTimeoutMs: 1_000, timeoutMs: 2_000 });
    try {
      const outcome = await callerWith(client)({ accountId: s.accountId, callId: callOf.a }, new AbortController().signal).call({ name: 'probe', url: `http://${name}:${backend.port}/x` } as never, {});
      assert.equal(outcome.ok, false);
      assert.equal((outcome as { error?: string }).error, 'refused');
      assert.match(outcome.content, /^error: destination refused \(rule: loopback\)$/);
      for (const r of resolved) assert.ok(!outcome.content.includes(r.address), `the result names ${r.address}`);
      assert.ok(!outcome.content.includes('resolves'), 'the result says what the name resolves to');
    } finally {
      client.close();
    }
  });
});

describe("a custom-LLM server that stops reading what we send", () => {
  it('is cut off once 1 MiB waits unsent, instead of growing the send buffer for the whole call', { timeout: 30_000 }, async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    // The server reads nothing: what we send stays in our buffers once the kernel's are full.
    wss.on('connection', (ws) => (ws as unknown as { _socket: { pause(): void } })._socket.pause());
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const policy = new DestinationPolicy(['127.0.0.1/32']);
    const open = llmSocketOpener({ lookup: policy.lookup, literalRefusal: (host) => policy.literalRefusal(host), userAgent: 'test' });
    let ended: { end: LlmSocketEnd; detail: string } | undefined;
    const socket = await open(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/llm`, { onMessage: () => {}, onClose: (end, detail) => (ended = { end, detail }) });
    const frame = JSON.stringify({ interaction_type: 'update_only', transcript: [{ role: 'agent', content: 'x'.repeat(60_000) }] });
    let sent = 0;
    try {
      // At most 64 MiB: without a bound, all of it would wait in our buffer.
      while (!ended && sent < 64 * 1_048_576) {
        socket.send(frame);
        sent += frame.length;
        if (sent % (1_048_576 * 4) < frame.length) await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(ended, `still open after ${(sent / 1_048_576).toFixed(0)} MiB unread`);
      assert.equal(ended.end, 'lost');
      assert.match(ended.detail, /stopped reading/);
      assert.ok(sent < 32 * 1_048_576, `cut off after ${(sent / 1_048_576).toFixed(1)} MiB`);
    } finally {
      socket.close();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });
});

describe('a webhook receiver that drips its answer, one byte at a time', () => {
  it("is bounded by the delivery's timeout, whatever it keeps sending", { timeout: 15_000 }, async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write('['), 20);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new WebhookHttpClient({ policy: new DestinationPolicy(['127.0.0.1/32']), connectTimeoutMs: 1_000, timeoutMs: 1_500 });
    try {
      const t0 = performance.now();
      const result = await client.send(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, { 'content-type': 'application/json' }, '{}');
      const ms = performance.now() - t0;
      assert.equal(result.failure, 'timeout');
      assert.ok(ms < 2_500, `took ${ms.toFixed(0)} ms`);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
