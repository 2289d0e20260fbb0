/**
 * Time limits on clients: a request's headers and its whole body must arrive within their bounds
 * (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS), then the server answers 408 with our body and
 * closes the connection; keep-alive still works for clients that send whole requests. Over raw
 * sockets on a real port, with short configured bounds. Node's HTTP server keeps these timers on
 * the real clock, so the test waits on it.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { assertErrorBody, rawExchange } from '../helpers/raw-http.ts';

const HEADERS_MS = 300;
const REQUEST_MS = 700;
/** What the bound may be exceeded by: the check interval (a quarter of the smaller bound) and a loaded machine. */
const SLACK_MS = 1_500;

describe('time limits on client connections', () => {
  let h: Harness;
  let key: string;
  let agentId: string;
  let app: FastifyInstance;
  let port: number;

  before(async () => {
    h = await startHarness('sqlite', { HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS) });
    key = (await h.account()).apiKey;
    ({ agentId } = await createFlowAgent(h, key));
    // The same runtime with the demo on (the operator key as DEMO_API_KEY), on a real port.
    app = await buildApp({ ...h.runtime, config: { ...h.config, demoApiKey: key } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as net.AddressInfo).port;
  });
  after(async () => {
    await app?.close();
    await h?.close();
  });

  const closures = async () => {
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(/switchboard_http_connections_closed_total\{reason="timeout"\} (\d+)/.exec(text)?.[1] ?? 0);
  };

  const partialBody = (url: string, extraHeaders = '') =>
    `POST ${url} HTTP/1.1\r\nHost: a\r\n${extraHeaders}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"agent_id": "`;

  it('closes a request whose body never arrives, on the demo and on an API route with a valid key, within the bound, with 408', async () => {
    const before = await closures();
    for (const [label, data] of [
      ['demo', partialBody('/demo/api/calls')],
      ['API with a key', partialBody('/v2/create-web-call', `Authorization: Bearer ${key}\r\n`)],
    ] as const) {
      const response = await rawExchange(port, data, { waitMs: REQUEST_MS + SLACK_MS + 2_000 });
      assert.ok(response.closed, `${label}: still open after ${response.elapsedMs} ms`);
      assert.ok(response.elapsedMs >= REQUEST_MS - 50, `${label}: closed after ${response.elapsedMs} ms, before the bound`);
      assert.ok(response.elapsedMs <= REQUEST_MS + SLACK_MS, `${label}: closed after ${response.elapsedMs} ms`);
      assertErrorBody(response, 408, 'request_timeout', label);
    }
    assert.equal((await closures()) - before, 2, 'counted on /metrics');
  });

  it('closes a request whose body keeps trickling in, byte by byte, at the whole-request bound', async () => {
    const response = await rawExchange(port, partialBody('/demo/api/calls'), { trickle: 'a'.repeat(200), trickleEveryMs: 20, waitMs: REQUEST_MS + SLACK_MS + 2_000 });
    assert.ok(response.closed && response.elapsedMs <= REQUEST_MS + SLACK_MS, `closed: ${response.closed} after ${response.elapsedMs} ms`);
    assertErrorBody(response, 408, 'request_timeout');
  });

  it('cuts off headers trickled byte by byte, and a connection that sends nothing, at the headers bound', async () => {
    const trickled = await rawExchange(port, 'GET /healthz HTTP/1.1\r\n', { trickle: `X-Slow: ${'s'.repeat(300)}\r\n\r\n`, trickleEveryMs: 20, waitMs: 5_000 });
    assert.ok(trickled.closed && trickled.elapsedMs <= HEADERS_MS + SLACK_MS, `trickled: closed ${trickled.closed} after ${trickled.elapsedMs} ms`);
    assertErrorBody(trickled, 408, 'request_timeout', 'trickled headers');
    const silent = await rawExchange(port, '', { waitMs: 5_000 });
    assert.ok(silent.closed && silent.elapsedMs <= HEADERS_MS + SLACK_MS, `silent: closed ${silent.closed} after ${silent.elapsedMs} ms`);
    // The WebSocket upgrade is an HTTP request until it upgrades: its headers are bounded the same way.
    const upgrade = await rawExchange(port, 'GET /v2/web-call HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n', { trickle: 'Connection: Upgrade\r\n', trickleEveryMs: 30, waitMs: 5_000 });
    assert.ok(upgrade.closed && upgrade.elapsedMs <= HEADERS_MS + SLACK_MS, `upgrade: closed ${upgrade.closed} after ${upgrade.elapsedMs} ms`);
  });

  it('closes 200 slow connections at once and keeps serving everyone else meanwhile', async () => {
    const before = await closures();
    const slow = Array.from({ length: 200 }, () => rawExchange(port, partialBody('/demo/api/calls'), { waitMs: REQUEST_MS + SLACK_MS + 3_000 }));
    const served = await fetch(`http://127.0.0.1:${port}/v2/create-web-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: agentId }),
    });
    assert.equal(served.status, 201);
    const results = await Promise.all(slow);
    assert.deepEqual(results.filter((r) => !r.closed).length, 0, 'every slow connection was closed');
    assert.ok(Math.max(...results.map((r) => r.elapsedMs)) <= REQUEST_MS + SLACK_MS + 1_000, `the last closed after ${Math.max(...results.map((r) => r.elapsedMs))} ms`);
    assert.equal((await closures()) - before, 200);
  });

  it('keeps a keep-alive connection open across requests spaced longer than the bounds in total', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let buffer = '';
    let closed = false;
    socket.on('close', () => (closed = true));
    const answers = () => (buffer.match(/HTTP\/1\.1 200/g) ?? []).length;
    const answered = (count: number) =>
      new Promise<void>((resolve) => {
        const check = (chunk?: Buffer) => {
          if (chunk) buffer += chunk.toString('latin1');
          if (answers() < count) return;
          socket.off('data', check);
          resolve();
        };
        socket.on('data', check);
        check();
      });
    const started = Date.now();
    for (let i = 1; i <= 4; i++) {
      socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
      await answered(i);
      await new Promise((resolve) => setTimeout(resolve, HEADERS_MS)); // idle between requests, under the keep-alive bound
    }
    assert.ok(Date.now() - started > REQUEST_MS, 'the connection outlived the request bound');
    assert.equal(closed, false, 'still open');
    assert.doesNotMatch(buffer, /408/);
    socket.destroy();
  });

  it('validates the time limits and TRUST_PROXY at start-up', () => {
    const config = loadConfig({});
    assert.deepEqual(config.http, { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 72_000, trustProxy: false });
    assert.throws(
      () => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_KEEP_ALIVE_TIMEOUT_MS: 'soon' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.startsWith('HTTP_REQUEST_TIMEOUT_MS (1000) must be at least HTTP_HEADERS_TIMEOUT_MS')) &&
        error.problems.some((p) => p.startsWith('HTTP_KEEP_ALIVE_TIMEOUT_MS must be an integer')),
    );
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).http.trustProxy, true);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).http.trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8 ,fd00::1' }).http.trustProxy, ['loopback', '10.0.0.0/8', 'fd00::1']);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'proxy.example' }), /TRUST_PROXY must be true, false, a number of hops/);
  });
});
