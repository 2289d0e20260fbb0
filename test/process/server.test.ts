import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, runCli, startServer } from '../helpers/process.ts';
import { STORES, type TestStore, createApiKey, openTestStore } from '../helpers/stores.ts';

describe('configuration', () => {
  it('stops start-up with one message naming every bad variable', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'src/main.ts')], {
      env: { ...process.env, PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', ACCESS_TOKEN_TTL_MS: '-5' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 2);
    const message = result.stderr.trim();
    assert.equal(message.split('\n').length, 1, message);
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'ACCESS_TOKEN_TTL_MS']) assert.match(message, new RegExp(name));
  });
});

for (const kind of STORES) {
  describe(`the server and CLI as processes on ${kind.name}`, { skip: kind.skip }, () => {
    let store: TestStore;
    let env: Record<string, string>;
    before(async () => {
      store = await openTestStore(kind.name);
      env = { DATA_DIR: store.dataDir, ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}) };
    });
    after(() => store.close());

    it('manages keys from the CLI: create, add, list without secrets, revoke', async () => {
      const created = await runCli(['keys', 'create', '--name', 'ops', '--rate-limit', '5'], env);
      assert.equal(created.code, 0, created.stderr);
      const first = JSON.parse(created.stdout);
      assert.match(first.account_id, /^acct_/);
      assert.match(first.api_key, /^sb_/);
      const added = JSON.parse((await runCli(['keys', 'create', '--account', first.account_id], env)).stdout);
      assert.equal(added.account_id, first.account_id);
      const listed = await runCli(['keys', 'list', '--account', first.account_id], env);
      const { keys } = JSON.parse(listed.stdout);
      assert.equal(keys.length, 2);
      assert.ok(!listed.stdout.includes(first.api_key) && !listed.stdout.includes(added.api_key), 'keys never listed');
      const revoked = await runCli(['keys', 'revoke', keys[0].id], env);
      assert.equal(revoked.code, 0);
      assert.equal(JSON.parse((await runCli(['keys', 'list', '--account', first.account_id], env)).stdout).keys[0].revoked_at !== null, true);
      const bad = await runCli(['keys', 'create', '--trial-ends', 'soon'], env);
      assert.equal(bad.code, 1);
      assert.equal(JSON.parse(bad.stderr.split('\n')[0]!).status, 'error');
      assert.equal((await runCli(['keys', 'list', '--account', 'acct_nope'], env)).code, 1);
    });

    it('says where to go in one human line on stderr, beside JSON logs on stdout', async () => {
      const server = await startServer(env);
      try {
        const base = server.baseUrl;
        // stderr is another pipe than stdout (where the ready line that startServer waits for is):
        // the human line, written first, may still be on its way.
        const humanLines = () => server.stderr().split('\n').filter((line) => line.startsWith('switchboard: ready.'));
        for (const deadline = Date.now() + 5_000; humanLines().length === 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
        const human = humanLines();
        assert.deepEqual(human, [`switchboard: ready. Dashboard ${base}/dashboard - demo off (set DEMO_API_KEY to turn it on) - API reference ${base}/docs`]);
        for (const line of server.lines) JSON.parse(line); // stdout stays JSON
        const ready = server.lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'switchboard ready');
        assert.deepEqual(ready.urls, { dashboard: `${base}/dashboard`, demo: null, docs: `${base}/docs` });
        assert.equal((await fetch(`${base}/dashboard`)).status, 200);
        assert.equal((await fetch(`${base}/docs`, { redirect: 'manual' })).status < 400, true);
      } finally {
        await server.stop();
      }
    });

    it('serves health, readiness, metrics and the OpenAPI document, and shuts down gracefully on SIGTERM', async () => {
      const key = await createApiKey(store.store); // the CLI's keys are the test above
      const server = await startServer(env);
      try {
        assert.deepEqual(await (await fetch(`${server.baseUrl}/healthz`)).json(), { status: 'ok' });
        assert.equal((await (await fetch(`${server.baseUrl}/readyz`)).json()).store, kind.name);
        const openapi = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
        assert.equal(openapi.openapi, '3.1.0');
        assert.ok(openapi.paths['/v2/create-web-call'].post);
        assert.ok(openapi.paths['/v2/update-call/{call_id}'].patch);
        const docs = await fetch(`${server.baseUrl}/docs/`, { redirect: 'follow' });
        assert.equal(docs.status, 200);
        assert.match(await docs.text(), /swagger/i);

        const unauth = await fetch(`${server.baseUrl}/list-agents`);
        assert.equal(unauth.status, 401);
        const listed = await fetch(`${server.baseUrl}/list-agents`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(listed.status, 200);
        assert.match(listed.headers.get('x-request-id') ?? '', /^req_/);
        const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
        assert.match(metrics, /http_requests_total\{method="GET",route="\/list-agents",status="401"\} 1/);
        assert.match(metrics, /http_request_duration_seconds_bucket/);
        assert.match(metrics, /switchboard_calls/);
        assert.match(metrics, /# TYPE switchboard_webhook_deliveries gauge/);

        // A request in flight (headers sent, body still coming) completes across SIGTERM.
        const { port } = new URL(server.baseUrl);
        const request = http.request({
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v2/list-calls',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': '2' },
        });
        const response = new Promise<number>((resolve, reject) => {
          request.on('response', (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          request.on('error', reject);
        });
        request.write('{');
        await new Promise((resolve) => setTimeout(resolve, 300));
        const exited = server.stop('SIGTERM');
        await new Promise((resolve) => setTimeout(resolve, 300));
        request.end('}');
        assert.equal(await response, 200);
        assert.equal(await exited, 0);
        await assert.rejects(fetch(`${server.baseUrl}/healthz`));
        const logs = server.lines.join('\n');
        assert.ok(!logs.includes(key), 'the API key is never logged');
        assert.match(logs, /"msg":"stopped"/);
        assert.ok(server.lines.every((line) => line.startsWith('{')), 'logs are JSON lines');
      } finally {
        await server.stop('SIGKILL');
      }
    });
  });
}

describe('the embedded store serves one server process', () => {
  it('refuses a second server on the same DATA_DIR, lets the CLI run beside it, and frees the lock when the first dies', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-lock-'));
    const env = { DATA_DIR: dataDir, DATABASE_URL: '' };
    const first = await startServer(env);
    try {
      const second = spawnSync(process.execPath, [path.join(ROOT, 'src/main.ts')], {
        env: { ...process.env, ...env, PORT: '0' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      assert.equal(second.status, 1, second.stderr);
      assert.match(second.stderr, /another Switchboard server is using the embedded store in .*DATABASE_URL/);
      assert.equal((await fetch(`${first.baseUrl}/healthz`)).status, 200, 'the first server is untouched');

      const cli = await runCli(['keys', 'create', '--name', 'beside the server'], env);
      assert.equal(cli.code, 0, cli.stderr);
      const { api_key: key } = JSON.parse(cli.stdout) as { api_key: string };
      const listed = await fetch(`${first.baseUrl}/list-agents`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(listed.status, 200, 'the server sees the key the CLI made');

      await first.stop('SIGKILL');
      const third = await startServer(env);
      assert.equal((await fetch(`${third.baseUrl}/healthz`)).status, 200, 'a crashed server leaves no lock behind');
      assert.equal(await third.stop('SIGTERM'), 0);
      const fourth = await startServer(env);
      assert.equal(await fourth.stop('SIGTERM'), 0, 'a stopped server releases it too');
    } finally {
      await first.stop('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
