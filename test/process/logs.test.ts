// The server's log (issue 27): one line per answered request, reads that succeed (what the
// dashboard polls) at debug, writes and failures at info; lines for a person when asked
// (LOG_FORMAT=pretty; `auto` picks them when stdout is a terminal), JSON otherwise.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { prettyLine } from '../../src/lib/pretty-log.ts';
import { ROOT, runCli, startServer } from '../helpers/process.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };

describe('server logs', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-logs-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('a successful read is logged at debug, a write and a failure at info, once each', { timeout: 60_000 }, async () => {
    const key = await runCli(['keys', 'create'], { DATA_DIR: dataDir, ...FAKE_ENGINES });
    const apiKey = JSON.parse(key.stdout).api_key as string;
    const server = await startServer({ DATA_DIR: dataDir, ...FAKE_ENGINES });
    try {
      const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
      const before = server.lines.length;
      assert.equal((await fetch(`${server.baseUrl}/v2/list-calls`, { method: 'POST', headers, body: '{}' })).status, 200);
      assert.equal((await fetch(`${server.baseUrl}/v2/call-stats`, { headers })).status, 200);
      assert.equal((await fetch(`${server.baseUrl}/create-conversation-flow`, { method: 'POST', headers, body: '{"start_node_id":"a","nodes":[{"id":"a","type":"end"}]}' })).status, 201);
      assert.equal((await fetch(`${server.baseUrl}/v2/get-call/call_nope`, { headers })).status, 422);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const requests = server.lines.slice(before).map((l) => JSON.parse(l) as { msg: string; level: number; req?: { method: string; url: string }; res?: { statusCode: number } }).filter((l) => l.req);
      assert.deepEqual(
        requests.map((l) => `${l.level} ${l.msg} ${l.req!.method} ${l.req!.url} ${l.res?.statusCode}`),
        ['30 request completed POST /create-conversation-flow 201', '30 request completed GET /v2/get-call/call_nope 422'],
      );
    } finally {
      await server.stop();
    }
  });

  it('LOG_FORMAT=pretty writes lines for a person; an error keeps its stack', { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, [path.join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: { ...process.env, ENV_FILE: '', PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', DATA_DIR: path.join(dataDir, 'pretty'), ...FAKE_ENGINES },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready: ${out}`)), 30_000);
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('switchboard ready')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
    } finally {
      child.kill('SIGTERM');
    }
    const ready = out.split('\n').find((l) => l.includes('switchboard ready'))!;
    assert.match(ready, /^\d\d:\d\d:\d\d\.\d{3} INFO +switchboard ready {2}store=sqlite dataDir=\S+ /);
    assert.equal(out.split('\n').filter((l) => l.trim().startsWith('{')).length, 0, 'no JSON line');

    const line = prettyLine(JSON.stringify({ level: 50, time: Date.UTC(2026, 0, 1, 9, 5, 7, 42), component: 'media', msg: 'call failed', callId: 'call_1', err: { message: 'boom', stack: 'Error: boom\n    at here' } }));
    assert.equal(line, '09:05:07.042 ERROR media  call failed  callId=call_1 err="boom"\n    Error: boom\n        at here\n');
  });
});
