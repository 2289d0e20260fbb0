import assert from 'node:assert/strict';
import dns from 'node:dns/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import ipaddr from 'ipaddr.js';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { DocumentFetcher } from '../../src/webhooks/document-fetcher.ts';

/** A server on 127.0.0.1 whose routes the tests set; it counts the requests that reach it. */
async function startServer(routes: Record<string, http.RequestListener>) {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests += 1;
    const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (route) route(req, res);
    else res.writeHead(404).end('not here');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const options = { maxBytes: 64 * 1024, timeoutMs: 400, maxRedirects: 3, userAgent: 'switchboard-test' };

describe('document fetcher (URL sources of knowledge bases)', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let streamed = 0;
  before(async () => {
    server = await startServer({
      '/page': (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>Hi</h1>'),
      '/hop': (_req, res) => res.writeHead(302, { location: '/page' }).end(),
      '/loop': (_req, res) => res.writeHead(301, { location: '/loop' }).end(),
      '/to-ipv6-loopback': (_req, res) => res.writeHead(302, { location: `http://[::1]:${server.port}/page` }).end(),
      '/to-metadata': (_req, res) => res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
      '/to-decimal': (_req, res) => res.writeHead(302, { location: `http://2130706434:${server.port}/page` }).end(),
      '/declared-large': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(10 * 1024 * 1024) }).end('short'),
      '/endless': (_req, res) => {
        // No Content-Length: the body streams until the reader hangs up.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) streamed += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      },
      '/silent': () => {
        // Never answers.
      },
      '/gzip': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end('x'),
    });
  });
  after(() => server.close());

  const allowLoopback = new DocumentFetcher({ policy: new DestinationPolicy(['127.0.0.1/32']), ...options });
  const strict = new DocumentFetcher({ policy: new DestinationPolicy([]), ...options });

  it('fetches a page and follows redirects, each hop checked', async () => {
    const page = await allowLoopback.fetch(`${server.base}/hop`);
    assert.ok(page.ok);
    assert.equal(Buffer.from(page.body).toString(), '<h1>Hi</h1>');
    assert.equal(page.contentType, 'text/html; charset=utf-8');
    assert.equal(page.url, `${server.base}/page`);
    assert.deepEqual(await allowLoopback.fetch(`${server.base}/loop`), { ok: false, error: 'More than 3 redirects.' });
    assert.deepEqual(await allowLoopback.fetch(`${server.base}/missing`), { ok: false, error: 'HTTP 404.' });
  });

  it('fails a redirect from an allowed address to a refused one, without connecting to it', async () => {
    for (const [path, rule] of [
      ['/to-ipv6-loopback', 'loopback'],
      ['/to-metadata', 'linkLocal'],
      ['/to-decimal', 'loopback'],
    ] as const) {
      const before = server.requests();
      const result = await allowLoopback.fetch(`${server.base}${path}`);
      assert.equal(result.ok, false, path);
      assert.equal(!result.ok && result.error, `destination refused (rule: ${rule})`, path);
      assert.equal(server.requests(), before + 1, `${path}: only the first hop reached a server`);
    }
  });

  it('refuses SSRF forms of loopback, private and metadata addresses before connecting', async () => {
    const port = server.port;
    const forms = [
      `http://127.0.0.1:${port}/page`,
      `http://[::1]:${port}/page`,
      `http://[::ffff:127.0.0.1]:${port}/page`,
      `http://[::127.0.0.1]:${port}/page`,
      `http://2130706433:${port}/page`,
      `http://0177.0.0.1:${port}/page`,
      `http://0x7f.1:${port}/page`,
      `http://localhost:${port}/page`,
      `http://LOCALHOST.:${port}/page`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://10.0.0.1/`,
      `http://0.0.0.0:${port}/page`,
    ];
    for (const url of forms) {
      const result = await strict.fetch(url);
      assert.equal(result.ok, false, url);
      assert.match(!result.ok ? result.error : '', /^destination refused \(rule: \w+\)$/, url);
    }
    const before = server.requests();
    for (const url of forms) await strict.fetch(url);
    assert.equal(server.requests(), before, 'no refused form reached the server');
    for (const url of ['ftp://example.com/a', 'file:///etc/passwd', 'http://user:pw@example.com/']) {
      const result = await strict.fetch(url);
      assert.equal(result.ok, false, url);
    }
  });

  it('refuses a host name that resolves to a refused address', async (t) => {
    // This machine's own name resolves to a loopback or private address on Linux hosts and containers.
    const name = os.hostname();
    const resolved = await dns.lookup(name).catch(() => null);
    if (!resolved || ipaddr.process(resolved.address).range() === 'unicast') return t.skip(`${name} does not resolve to a non-public address here`);
    const before = server.requests();
    const result = await strict.fetch(`http://${name}:${server.port}/page`);
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.error : '', /^destination refused \(rule: \w+\)$/);
    assert.equal(!result.ok && result.error.includes(resolved.address), false, 'the tenant is not told what the name resolves to');
    assert.equal(server.requests(), before);
  });

  it('bounds size and time, and reads no compressed response', async () => {
    assert.deepEqual(await allowLoopback.fetch(`${server.base}/declared-large`), { ok: false, error: `The document is larger than ${options.maxBytes} bytes.` });
    const endless = await allowLoopback.fetch(`${server.base}/endless`);
    assert.deepEqual(endless, { ok: false, error: `The document is larger than ${options.maxBytes} bytes.` });
    const started = performance.now();
    assert.deepEqual(await allowLoopback.fetch(`${server.base}/silent`), { ok: false, error: `No complete response within ${options.timeoutMs} ms.` });
    const took = performance.now() - started;
    assert.ok(took >= options.timeoutMs - 20 && took < options.timeoutMs + 1500, `took ${took} ms`);
    const gzip = await allowLoopback.fetch(`${server.base}/gzip`);
    assert.equal(gzip.ok, false);
    assert.match(!gzip.ok ? gzip.error : '', /compressed \(gzip\)/);
    // The endless body stopped: the server was not made to send much past the bound.
    assert.ok(streamed < 16 * 1024 * 1024, `streamed ${streamed} bytes`);
  });
});
