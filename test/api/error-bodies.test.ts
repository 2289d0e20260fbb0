/**
 * Every error the server sends, from any layer (Node's HTTP parser, Fastify's router, the routes,
 * the WebSocket upgrade), has the documented body `{"status":"error","code","message"}` and never
 * echoes the request. Over a raw socket where no HTTP client would send the request.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { assertErrorBody, rawExchange } from '../helpers/raw-http.ts';
import { STORES } from '../helpers/stores.ts';

const LONG = 'x'.repeat(600);

for (const kind of STORES) {
  describe(`error bodies from every layer on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let port: number;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      port = (h.app.server.address() as net.AddressInfo).port;
    });
    after(() => h?.close());

    const send = (data: string) => rawExchange(port, data);

    it("answers the HTTP parser's errors (malformed, oversized, smuggling-shaped) with our body and closes", async () => {
      const cases: Array<[string, string, number, string]> = [
        ['garbage request line', 'GARBAGE\r\n\r\n', 400, 'malformed_request'],
        ['space in a header name', 'GET /healthz HTTP/1.1\r\nHost: a\r\nBad Header: 1\r\n\r\n', 400, 'malformed_request'],
        ['bad HTTP version', 'GET /healthz HTTP/1.7\r\nHost: a\r\n\r\n', 400, 'malformed_request'],
        ['Content-Length with Transfer-Encoding', 'POST /v2/list-calls HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', 400, 'malformed_request'],
        ['bad chunk size', `POST /v2/list-calls HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`, 400, 'malformed_request'],
        ['HTTP/2 preface on HTTP/1.1', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400, 'malformed_request'],
        ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
        ['request line over 16 KiB', `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`, 431, 'headers_too_large'],
        ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 400, 'invalid_request'],
        ['Expect other than 100-continue', 'POST /v2/list-calls HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n{}', 417, 'expectation_failed'],
        ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 404, 'route_not_found'],
      ];
      for (const [label, data, status, code] of cases) {
        const response = await send(data);
        assertErrorBody(response, status, code, label);
        assert.ok(response.closed, `${label}: the connection is closed`);
        assert.equal(response.headers.connection, 'close', label);
        assert.doesNotMatch(response.body, /aaaa|teapot|example\.com|Bad Header/, `${label}: no echo`);
      }
    });

    it("answers the router's errors before auth without echoing the URL: 414 for an over-long id, 400 for bad percent-encoding", async () => {
      for (const url of [`/v2/get-call/${LONG}`, `/get-agent/${LONG}`, `/get-agent-versions/${LONG}`]) {
        const response = await send(`GET ${url} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
        assertErrorBody(response, 414, 'uri_too_long', url.slice(0, 30));
        assert.doesNotMatch(response.body, /xxxxxxxxxx/, 'the URL is not echoed');
      }
      for (const url of ['/v2/get-call/%E0%A4%A', '/v2/get-call/%zz', '/get-agent/agent_%']) {
        const response = await send(`GET ${url} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
        assertErrorBody(response, 400, 'invalid_url', url);
        assert.ok(!response.body.includes(url), 'the URL is not echoed');
      }
      // The same through inject (Fastify's router, no socket).
      const injected = await h.request({ method: 'GET', url: `/v2/get-call/${LONG}`, key });
      assertErrorBody({ status: injected.status, headers: injected.headers, body: injected.raw }, 414, 'uri_too_long');
    });

    it('answers unknown routes and methods with 404 and at most 100 characters of the path', async () => {
      for (const [method, url] of [['GET', '/nope'], ['PUT', '/v2/create-web-call'], ['PROPFIND', '/'], ['OPTIONS', '*'], ['GET', `/${'y'.repeat(5_000)}`]] as const) {
        const response = await send(`${method} ${url} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
        assertErrorBody(response, 404, 'route_not_found', `${method} ${url.slice(0, 20)}`);
        assert.ok(response.body.length < 200, 'the path is cut short');
      }
    });

    it('answers body errors with our body: 413 by Content-Length and by size, a wrong Content-Type, an empty body where one is required', async () => {
      const auth = `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`;
      assertErrorBody(await send(`POST /v2/create-web-call HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: 2000000\r\n\r\n{}`), 413, 'payload_too_large', 'declared');
      const big = JSON.stringify({ agent_id: 'a', metadata: { blob: 'x'.repeat(1_100_000) } });
      const sent = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: big });
      assertErrorBody({ status: sent.status, headers: sent.headers, body: sent.raw }, 413, 'payload_too_large', 'sent');
      assertErrorBody(await send(`POST /v2/create-web-call HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/xml\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`), 400, 'invalid_content_type');
      assertErrorBody(await send(`POST /v2/create-web-call HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: 0\r\nConnection: close\r\n\r\n`), 400, 'invalid_json', 'empty body');
    });

    it('answers an unsatisfiable Range on get-call-recording with 416, Content-Range and our body', async () => {
      const { agentId } = await createFlowAgent(h, key);
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const callId: string = created.json.call_id;
      await h.runtime.services.lifecycle.joinCall(created.json.access_token);
      // 100 ms recorded through the store the runtime chose (a file on SQLite, chunks on PostgreSQL).
      const writer = h.runtime.services.recordings.open(callId);
      await writer.writeChunk(0, 0, Buffer.alloc(3_200));
      const recordingPath = await writer.finish(1_600, 16_000);
      const wav = { length: 44 + 1_600 * 4 };
      await h.runtime.services.lifecycle.finishCall(callId, { reason: 'user_hangup', recordingPath });
      for (const range of [`bytes=${wav.length}-`, 'bytes=-0', `bytes=${wav.length + 10}-${wav.length + 20}`]) {
        const response = await h.request({ method: 'GET', url: `/v2/get-call-recording/${callId}`, key, headers: { range } });
        assertErrorBody({ status: response.status, headers: response.headers, body: response.raw }, 416, 'range_not_satisfiable', range);
        assert.equal(response.headers['content-range'], `bytes */${wav.length}`);
        assert.equal(response.headers['content-disposition'], undefined, 'not a download');
      }
      const partial = await h.request({ method: 'GET', url: `/v2/get-call-recording/${callId}`, key, headers: { range: 'bytes=0-3' } });
      assert.equal(partial.status, 206);
      assert.equal(partial.raw, 'RIFF');
    });

    it('answers a refused WebSocket upgrade with our body: an unknown path (404), a bad handshake (400), another method (405)', async () => {
      const upgrade = (method: string, url: string, extra: string) =>
        send(`${method} ${url} HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${extra}\r\n`);
      const goodKey = 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
      const cases: Array<[string, Promise<Awaited<ReturnType<typeof send>>>, number, string]> = [
        ['unknown path', upgrade('GET', '/nope', goodKey), 404, 'route_not_found'],
        ['no key', upgrade('GET', '/v2/web-call', 'Sec-WebSocket-Version: 13\r\n'), 400, 'invalid_upgrade'],
        ['bad version', upgrade('GET', '/v2/web-call', 'Sec-WebSocket-Version: 99\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'), 400, 'invalid_upgrade'],
        ['POST', upgrade('POST', '/v2/web-call', `${goodKey}Content-Length: 0\r\n`), 405, 'invalid_upgrade'],
      ];
      for (const [label, pending, status, code] of cases) {
        const response = await pending;
        assertErrorBody(response, status, code, label);
        assert.ok(response.closed, `${label}: closed`);
      }
    });

    it('answers requests that arrive while the server shuts down with 503 and Connection: close', async () => {
      const own = await startHarness(kind.name);
      try {
        const app = await buildApp(own.runtime);
        let release!: () => void;
        let reached!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        const closeStarted = new Promise<void>((resolve) => (reached = resolve));
        app.addHook('preClose', async () => {
          reached();
          await held;
        });
        await app.listen({ port: 0, host: '127.0.0.1' });
        const socket = net.connect((app.server.address() as net.AddressInfo).port, '127.0.0.1');
        const responses: string[] = [];
        let buffer = '';
        const next = () =>
          new Promise<string>((resolve) => {
            const check = () => {
              const end = buffer.indexOf('\r\n\r\n');
              const length = Number(/content-length: (\d+)/i.exec(buffer)?.[1] ?? -1);
              if (end >= 0 && length >= 0 && buffer.length >= end + 4 + length) {
                const response = buffer.slice(0, end + 4 + length);
                buffer = buffer.slice(end + 4 + length);
                responses.push(response);
                socket.off('data', onData);
                resolve(response);
              }
            };
            const onData = (chunk: Buffer) => {
              buffer += chunk.toString('latin1');
              check();
            };
            socket.on('data', onData);
            check();
          });
        socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
        assert.match(await next(), /^HTTP\/1\.1 200/);
        const closing = app.close();
        await closeStarted;
        socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
        const second = await next();
        const [head = '', body = ''] = second.split('\r\n\r\n');
        assert.match(head, /^HTTP\/1\.1 503/);
        assert.match(head, /connection: close/i);
        assertErrorBody({ status: 503, headers: { 'content-type': /content-type: ([^\r]+)/i.exec(head)?.[1] }, body }, 503, 'shutting_down');
        socket.destroy();
        release();
        await closing;
      } finally {
        await own.close();
      }
    });
  });
}
