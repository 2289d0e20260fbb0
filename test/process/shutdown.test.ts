// SIGTERM on a real server process: with calls joined and speech being synthesized and
// recognised, it ends every call (server_shutdown, call.finished recorded), leaves nothing behind
// (no Flite temp directory, no decoder process) and exits 0 within SHUTDOWN_TIMEOUT_MS; with a
// part that does not finish closing, it still exits within the bound, non-zero, naming that part.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { runCli, startServer, type ServerProcess } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';
import { hasPocketsphinx } from '../voice/capabilities.ts';
import { concat, silence } from '../voice/harness.ts';
import { Receiver } from '../webhooks/receiver.ts';

const SHUTDOWN_TIMEOUT_MS = 4_000;
/** Exit latency allowed beyond the bound: the process is gone shortly after it. */
const MARGIN_MS = 1_000;

/** Live processes whose environment carries `marker` (the server's children inherit it). */
function processesMarked(marker: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (fs.readFileSync(`/proc/${entry}/environ`, 'latin1').includes(marker)) found.push(Number(entry));
    } catch {
      // ended while we looked, or not ours
    }
  }
  return found;
}

/** SIGTERM; resolves with the exit code and the milliseconds it took. */
async function terminate(server: ServerProcess): Promise<{ code: number | null; ms: number }> {
  const started = performance.now();
  const code = await server.stop('SIGTERM');
  return { code, ms: performance.now() - started };
}

async function api(server: ServerProcess, key: string, method: string, route: string, body?: unknown) {
  const res = await fetch(`${server.baseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

async function flowAgent(server: ServerProcess, key: string, text: string): Promise<string> {
  const flow = await api(server, key, 'POST', '/create-conversation-flow', { start_node_id: 'talk', nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text } }] });
  assert.equal(flow.status, 201, JSON.stringify(flow.json));
  const agent = await api(server, key, 'POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
  assert.equal(agent.status, 201, JSON.stringify(agent.json));
  return agent.json.agent_id as string;
}

for (const kind of STORES) {
  describe(`shutdown of a server process (${kind.name})`, { skip: kind.skip }, () => {
    let store: TestStore;
    let tmp: string;
    before(async () => {
      store = await openTestStore(kind.name);
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-shutdown-tmp-'));
    });
    after(async () => {
      await store.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    });
    const env = (extra: Record<string, string>) => ({
      DATA_DIR: store.dataDir,
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      // The server's own temp directory: what Flite leaves there is this server's.
      TMPDIR: tmp,
      ...extra,
    });

    it('ends calls with speech in flight, leaves no temp directory or decoder behind, and exits 0 in time', { timeout: 90_000 }, async () => {
      const marker = `SB_SHUTDOWN_TEST_${randomBytes(6).toString('hex')}`;
      const e = env({ TTS_PROVIDER: 'flite', STT_PROVIDER: hasPocketsphinx() ? 'pocketsphinx' : 'fake', [marker]: '1' });
      const key = JSON.parse((await runCli(['keys', 'create'], e)).stdout).api_key as string;
      const server = await startServer(e);
      const flite = new FliteTts();
      try {
        // A long opening message: Flite works through it sentence by sentence for seconds.
        const long = Array.from({ length: 40 }, (_, i) => `This is sentence number ${i + 1} of a long opening message.`).join(' ');
        const agentId = await flowAgent(server, key, long);
        const clients: WebCallClient[] = [];
        for (let i = 0; i < 4; i++) {
          const call = await api(server, key, 'POST', '/v2/create-web-call', { agent_id: agentId });
          assert.equal(call.status, 201, JSON.stringify(call.json));
          clients.push(await WebCallClient.join({ url: server.baseUrl, accessToken: call.json.access_token }));
        }
        await Promise.all(clients.map((c) => c.waitFor('agent_start_talking', 20_000)));
        // One caller speaks over the agent, so a recogniser is busy with an utterance at SIGTERM.
        const parts: Int16Array[] = [];
        for await (const chunk of flite.synthesize('i would like to speak to someone about my account please')) parts.push(chunk);
        void clients[0]!.play(concat(...parts, silence(2_000)));
        await new Promise((r) => setTimeout(r, 1_200));

        const { code, ms } = await terminate(server);
        const logs = server.lines.join('\n');
        assert.equal(code, 0, logs.slice(-2000));
        assert.ok(ms < SHUTDOWN_TIMEOUT_MS + MARGIN_MS, `exited after ${Math.round(ms)} ms`);
        assert.match(logs, /"msg":"stopped"/);
        assert.doesNotMatch(logs, /shutdown timed out/);

        const ends = await Promise.all(clients.map((c) => c.ended));
        assert.deepEqual(ends.map((end) => end.disconnection_reason), clients.map(() => 'server_shutdown'));
        const rows = await store.store.db.selectFrom('calls').select(['call_id', 'disconnection_reason']).where('call_id', 'in', clients.map((c) => c.callId)).execute();
        assert.deepEqual(rows.map((r) => r.disconnection_reason), clients.map(() => 'server_shutdown'));
        const finished = await store.store.db.selectFrom('webhook_events').select(['data']).where('kind', '=', 'call.finished').execute();
        for (const c of clients) assert.equal(finished.filter((f) => String(f.data).includes(c.callId)).length, 1, `one call.finished for ${c.callId}`);

        // Before the fix: Flite's directory stayed behind, and decoders outlived the server.
        assert.deepEqual(fs.readdirSync(tmp).filter((d) => d.startsWith('switchboard-flite-')), []);
        assert.deepEqual(processesMarked(marker), [], 'no process the server started outlives it');
      } finally {
        await flite.close();
        await server.stop('SIGKILL');
      }
    });

    it('exits within the bound, non-zero, naming what did not finish, when a part hangs on close', { timeout: 60_000 }, async () => {
      const receiver = await Receiver.start();
      receiver.respond = () => 'hang'; // a receiver that takes the delivery and never answers
      const bound = 1_500;
      const e = env({ TTS_PROVIDER: 'fake', STT_PROVIDER: 'fake', SHUTDOWN_TIMEOUT_MS: String(bound), WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '60000' });
      const key = JSON.parse((await runCli(['keys', 'create'], e)).stdout).api_key as string;
      const server = await startServer(e);
      try {
        const hook = await api(server, key, 'POST', '/api/v1/webhooks/set.php', { url: receiver.url(), events: ['*'] });
        assert.equal(hook.status, 201, JSON.stringify(hook.json));
        const lead = await api(server, key, 'POST', '/api/v1/leads/create.php', { name: 'Ada', phone: '+15550100' });
        assert.ok(lead.status < 300, JSON.stringify(lead.json));
        await receiver.waitFor(1); // the delivery is in flight, and stays so

        const { code, ms } = await terminate(server);
        assert.equal(code, 1);
        assert.ok(ms >= bound && ms < bound + MARGIN_MS, `exited after ${Math.round(ms)} ms`);
        const timedOut = server.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'shutdown timed out; exiting');
        assert.ok(timedOut, 'a log line says the shutdown timed out');
        assert.equal(timedOut['unfinished'], 'webhook deliveries');
        assert.deepEqual(timedOut['notStarted'], ['speech engines and store', 'server lock']);
      } finally {
        await server.stop('SIGKILL');
        await receiver.close();
      }
    });
  });
}
