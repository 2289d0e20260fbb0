// A real server process under an audio flood: clients join calls (three through the API, one
// through /demo with no key) and send 64 KiB binary messages as fast as they can for 8 s. The
// server must keep its memory, keep answering the API, cut the flooders off with the documented
// close code, keep each recording within its call's wall-clock duration + 1 s, and count it all
// on /metrics (docs/media-protocol.md, "Limits").
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { CLOSE } from '../../src/protocol/media.constants.ts';
import { type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';
import { type RawClient, rawJoin } from '../media/helpers.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };
const FLOOD_MS = 8_000;
const MESSAGE = randomBytes(65_536); // the largest message the protocol accepts: 2 s of "audio"

/** Resident memory of a process, bytes (Linux). */
function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

interface FloodResult {
  closeCode: number;
  /** Bytes handed to the socket. */
  sent: number;
  /** JSON events received. */
  events: RawClient['events'];
}

/** Joins with a raw `ws` client, then sends 64 KiB binary messages as fast as the socket takes them. */
async function flood(baseUrl: string, accessToken: string, durationMs: number): Promise<FloodResult> {
  const { ws, events, closed } = await rawJoin(baseUrl, accessToken);
  let sent = 0;
  const until = Date.now() + durationMs;
  while (Date.now() < until && ws.readyState === WebSocket.OPEN) {
    // As fast as the connection takes it: keep up to 4 MB queued, yield so the socket is written.
    while (ws.bufferedAmount < 4 * 1_048_576 && ws.readyState === WebSocket.OPEN) {
      ws.send(MESSAGE, { binary: true });
      sent += MESSAGE.length;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (ws.readyState === WebSocket.OPEN) ws.close(1000);
  return { closeCode: await closed, sent, events };
}

/** The WAV's audio length in ms, from its header (without downloading the whole file). */
async function recordingMs(baseUrl: string, key: string, callId: string): Promise<number> {
  const res = await fetch(`${baseUrl}/v2/get-call-recording/${callId}`, { headers: { authorization: `Bearer ${key}`, range: 'bytes=0-43' } });
  assert.equal(res.status, 206, `recording of ${callId}`);
  const head = Buffer.from(await res.arrayBuffer());
  assert.equal(head.toString('latin1', 36, 40), 'data');
  const channels = head.readUInt16LE(22);
  const rate = head.readUInt32LE(24);
  return (head.readUInt32LE(40) / (channels * 2) / rate) * 1000;
}

for (const kind of STORES) {
  describe(`a server process under an audio flood on ${kind.name}`, { skip: kind.skip }, () => {
    let store: TestStore;
    let server: ServerProcess;
    let key: string;
    let agentId: string;
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: await res.json() };
    };

    before(async () => {
      store = await openTestStore(kind.name);
      const env = { DATA_DIR: store.dataDir, ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}), ...FAKE_ENGINES };
      const created = await runCli(['keys', 'create', '--name', 'flood', '--rate-limit', '1000'], env);
      assert.equal(created.code, 0, created.stderr);
      key = JSON.parse(created.stdout).api_key;
      server = await startServer({ ...env, DEMO_API_KEY: key });
      const flow = await api('POST', '/create-conversation-flow', {
        start_node_id: 'hi',
        nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, how can I help?' } }],
      });
      const agent = await api('POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
      agentId = agent.json.agent_id;
    });
    after(async () => {
      await server?.stop('SIGKILL');
      await store?.close();
    });

    it('keeps memory and the API, cuts the flooders off, and keeps each recording within its call + 1 s', async () => {
      const tokens: Array<{ call_id: string; access_token: string }> = [];
      for (let i = 0; i < 3; i++) {
        const c = await api('POST', '/v2/create-web-call', { agent_id: agentId });
        assert.equal(c.status, 201);
        tokens.push(c.json);
      }
      const demo = await fetch(`${server.baseUrl}/demo/api/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: agentId }) });
      assert.equal(demo.status, 201, 'the demo creates a call with no key');
      tokens.push((await demo.json()) as { call_id: string; access_token: string });

      const pid = server.child.pid!;
      const baseline = rssBytes(pid);
      let peak = baseline;
      const latencies: number[] = [];
      let flooding = true;
      // The API while the flood runs: one request at a time, each timed.
      const probe = (async () => {
        while (flooding) {
          const t0 = performance.now();
          const res = await api('GET', `/v2/get-call/${tokens[0]!.call_id}`);
          latencies.push(performance.now() - t0);
          assert.equal(res.status, 200);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 50);
      let results: FloodResult[];
      try {
        results = await Promise.all(tokens.map((t) => flood(server.baseUrl, t.access_token, FLOOD_MS)));
        // Whatever the server still holds for the calls ends and is stored.
        const calls = await Promise.all(tokens.map(async (t) => {
          for (const until = Date.now() + 120_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
            const got = await api('GET', `/v2/get-call/${t.call_id}`);
            if (got.json.call_status === 'ended' || got.json.call_status === 'error') return got.json;
          }
          throw new Error(`call ${t.call_id} did not end`);
        }));
        flooding = false;
        await probe;
        peak = Math.max(peak, rssBytes(pid));
        clearInterval(sampler);

        const lengths = await Promise.all(calls.map((c) => recordingMs(server.baseUrl, key, c.call_id)));
        const sorted = [...latencies].sort((a, b) => a - b);
        const growthMb = (peak - baseline) / 1_048_576;
        console.log(`# ${kind.name}: RSS ${(baseline / 1_048_576).toFixed(0)} MB -> peak ${(peak / 1_048_576).toFixed(0)} MB (+${growthMb.toFixed(1)} MB); `
          + `API p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms over ${sorted.length}; `
          + `sent ${results.map((r) => (r.sent / 1_048_576).toFixed(0)).join('/')} MB; close ${results.map((r) => r.closeCode).join('/')}; `
          + `recordings ${lengths.map((l, i) => `${(l / 1000).toFixed(1)} s of ${calls[i].duration_ms} ms`).join(', ')}`);

        assert.ok(growthMb < 100, `RSS grew by ${growthMb.toFixed(1)} MB`);
        for (const [i, call] of calls.entries()) {
          assert.ok(lengths[i]! <= call.duration_ms + 1_000, `recording of ${lengths[i]} ms for a call of ${call.duration_ms} ms`);
          assert.equal(results[i]!.closeCode, CLOSE.tooFast, `flooder ${i} closed with ${results[i]!.closeCode}`);
          assert.equal(call.disconnection_reason, 'error_client_flood');
          assert.equal(call.call_status, 'error');
          assert.ok(results[i]!.events.some((e) => e.type === 'error' && e.code === 'error_client_flood'), 'the flooder was told why');
        }
        assert.ok(latencies.length >= 5, 'the API was probed during the flood');
        assert.ok(sorted.at(-1)! < 2_000, `an API request took ${sorted.at(-1)} ms during the flood`);

        const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
        const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(metrics)?.[1] ?? 'NaN');
        assert.ok(value('switchboard_media_audio_dropped_seconds_total') > 0, 'dropped audio is counted');
        assert.equal(value('switchboard_media_flood_disconnections_total'), tokens.length);
      } finally {
        flooding = false;
        clearInterval(sampler);
        await probe.catch(() => {});
      }
    });
  });
}
