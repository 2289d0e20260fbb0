import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KEY_FILE_NAME } from '../../src/lib/secret-box.ts';
import { verifyWebhook } from '../../src/webhooks/verify.ts';
import { ROOT, type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';

const pg = STORES.find((s) => s.name === 'postgres')!;

describe('one key for webhook secrets across servers on PostgreSQL', { skip: pg.skip }, () => {
  let store: TestStore;
  let rx: Receiver;
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  before(async () => {
    store = await openTestStore('postgres');
    rx = await Receiver.start();
  });
  after(async () => {
    for (const server of servers) await server.stop('SIGKILL');
    await rx.close();
    await store.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
  const dataDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-key-'));
    dirs.push(dir);
    return dir;
  };

  it('refuses to start without WEBHOOK_SECRET_KEYS and says why', () => {
    const dir = dataDir();
    const result = spawnSync(process.execPath, [path.join(ROOT, 'src/main.ts')], {
      env: { ...process.env, PORT: '0', DATA_DIR: dir, DATABASE_URL: store.databaseUrl as string, WEBHOOK_SECRET_KEYS: '' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /WEBHOOK_SECRET_KEYS is required with DATABASE_URL: every server on one PostgreSQL database must .* same key/);
    assert.equal(fs.existsSync(path.join(dir, KEY_FILE_NAME)), false, 'no per-server key is generated');
  });

  it('lets a second server, with its own DATA_DIR, sign what the first stored', async () => {
    const env = {
      DATABASE_URL: store.databaseUrl as string,
      WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    };
    const created = await runCli(['keys', 'create'], { ...env, DATA_DIR: dataDir() });
    assert.equal(created.code, 0, created.stderr);
    const apiKey = (JSON.parse(created.stdout) as { api_key: string }).api_key;
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };

    // The first server stores the secret and sends nothing; the second, started later, delivers.
    const first = await startServer({ ...env, DATA_DIR: dataDir(), WEBHOOK_WORKER: 'false' });
    servers.push(first);
    const set = await fetch(`${first.baseUrl}/api/v1/webhooks/set.php`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: rx.url('/signed'), events: ['lead.created'] }),
    });
    assert.equal(set.status, 201);
    const { secret } = (await set.json()) as { secret: string };
    const second = await startServer({ ...env, DATA_DIR: dataDir() });
    servers.push(second);

    const lead = await fetch(`${first.baseUrl}/api/v1/leads/create.php`, { method: 'POST', headers, body: JSON.stringify({ name: 'Ada', phone: '555-0100' }) });
    assert.equal(lead.status, 201);
    await rx.waitFor(1, 20_000);
    const [delivery] = rx.received;
    const verified = verifyWebhook(delivery!.raw, delivery!.headers, secret);
    assert.equal(verified.event, 'lead.created');
    for (const dir of dirs) assert.equal(fs.existsSync(path.join(dir, KEY_FILE_NAME)), false, 'no server generated a key of its own');
  });
});
