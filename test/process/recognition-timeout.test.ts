// STT_TIMEOUT_MS in a real server process: a recogniser that takes the caller's audio and never
// answers ends the call with error_asr after the configured time, instead of a silent agent.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { ROOT, type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { concat, silence, tone } from '../voice/harness.ts';

/** A Deepgram-protocol endpoint that accepts audio and Finalize but never answers. */
async function mutedRecogniser() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  let finalizes = 0;
  wss.on('connection', (ws) => {
    ws.on('message', (data, isBinary) => {
      if (!isBinary && (data as Buffer).toString('utf8').includes('"Finalize"')) finalizes++;
    });
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/listen`,
    finalizes: () => finalizes,
    close: () => {
      for (const ws of wss.clients) ws.terminate();
      return new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

describe('STT_TIMEOUT_MS', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-stt-timeout-'));
  let recogniser: Awaited<ReturnType<typeof mutedRecogniser>>;
  let server: ServerProcess;
  let apiKey: string;
  before(async () => {
    recogniser = await mutedRecogniser();
    // Below Deepgram's own 3 s wait for a Finalize answer, so the pipeline's bound is what ends the turn.
    const env = { DATA_DIR: dataDir, STT_PROVIDER: 'deepgram', STT_BASE_URL: recogniser.url, STT_TIMEOUT_MS: '1000', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };
    apiKey = JSON.parse((await runCli(['keys', 'create'], env)).stdout).api_key;
    server = await startServer(env);
  });
  after(async () => {
    await server?.stop();
    await recogniser?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a recogniser that never answers ends the call with error_asr once the timeout has passed', async () => {
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const flow = (await (await fetch(`${server.baseUrl}/create-conversation-flow`, {
      method: 'POST', headers,
      body: JSON.stringify({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' } }] }),
    })).json()) as { conversation_flow_id: string };
    const agent = (await (await fetch(`${server.baseUrl}/create-agent`, {
      method: 'POST', headers, body: JSON.stringify({ response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } }),
    })).json()) as { agent_id: string };
    const call = (await (await fetch(`${server.baseUrl}/v2/create-web-call`, { method: 'POST', headers, body: JSON.stringify({ agent_id: agent.agent_id }) })).json()) as { access_token: string };
    const client = await WebCallClient.join({ url: server.baseUrl, accessToken: call.access_token });
    await client.waitFor('agent_stop_talking', 5_000);
    await client.play(concat(tone(600), silence(100)));
    const spokeAt = client.now();
    const end = await client.ended;
    const endedAfter = client.now() - spokeAt;
    assert.equal(end.disconnection_reason, 'error_asr');
    assert.ok(client.events.some((e) => e.type === 'error' && (e as { code?: string }).code === 'error_asr'), 'the client was told why');
    assert.equal(recogniser.finalizes(), 1, 'the turn was finalized once and never answered');
    // Endpointing (500 ms) + STT_TIMEOUT_MS (1000 ms). With the default (5000 ms) Deepgram's own
    // 3 s wait would have let the turn pass as empty first: error_asr itself shows the setting applied.
    assert.ok(endedAfter >= 1_200 && endedAfter < 4_000, `the call ended ${Math.round(endedAfter)} ms after the speech`);
  });

  it('refuses a value out of range at start-up, naming the variable', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'src/main.ts')], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', STT_TIMEOUT_MS: '10' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /STT_TIMEOUT_MS/);
  });
});
