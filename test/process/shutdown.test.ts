// SIGTERM on a real server process: with calls joined and speech being synthesized and
// recognised, it ends every call (server_shutdown, call.finished recorded), leaves nothing behind
// (no Flite temp directory, no decoder process) and exits 0 within SHUTDOWN_TIMEOUT_MS. Slow
// outside parts get their share of the bound and lose nothing: a webhook receiver that never
// answers (the delivery stays pending and is sent after a restart), an LLM that never answers the
// post-call analysis (the embedded analysis is stored). A part that really hangs (a PostgreSQL
// server stopped with SIGSTOP) still sees the process exit at the bound, 1, naming that step.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { findPostgresBin, startCluster } from '../../scripts/postgres.ts';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { runCli, startServer, type ServerProcess } from '../helpers/process.ts';
import { STORES, type TestStore, createApiKey, openTestStore } from '../helpers/stores.ts';
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

/** An HTTP server that takes each request and never answers (an LLM that hangs). */
async function hangingServer() {
  const open = new Set<ServerResponse>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    open.add(res);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` every 50 ms until it holds; throws after `timeoutMs`. */
async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The parent pid of `pid`, from /proc. */
function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
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
      const key = await createApiKey(store.store);
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

    it('exits 0 in time while a webhook receiver never answers; the delivery stays pending and a restart sends it', { timeout: 60_000 }, async () => {
      const receiver = await Receiver.start();
      receiver.respond = () => 'hang'; // a receiver that takes the delivery and never answers
      // Attempts may take a minute: only the shutdown's grace for deliveries can end this one in time.
      const e = env({ TTS_PROVIDER: 'fake', STT_PROVIDER: 'fake', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '60000' });
      const key = await createApiKey(store.store);
      let server = await startServer(e);
      try {
        const hook = await api(server, key, 'POST', '/api/v1/webhooks/set.php', { url: receiver.url(), events: ['*'] });
        assert.equal(hook.status, 201, JSON.stringify(hook.json));
        const lead = await api(server, key, 'POST', '/api/v1/leads/create.php', { name: 'Ada', phone: '+15550100' });
        assert.ok(lead.status < 300, JSON.stringify(lead.json));
        await receiver.waitFor(1); // the delivery is in flight, and stays so

        const { code, ms } = await terminate(server);
        const logs = server.lines.join('\n');
        assert.equal(code, 0, logs.slice(-2000));
        assert.ok(ms < SHUTDOWN_TIMEOUT_MS + MARGIN_MS, `exited after ${Math.round(ms)} ms`);
        assert.doesNotMatch(logs, /shutdown timed out/);
        assert.match(logs, /"deliveries":1,.*"msg":"webhook sends cut off at close; their deliveries stay pending"/);
        await receiver.waitForDrop(); // the send was aborted, not left to the receiver

        // Not lost, and no attempt recorded: pending, due, no lease.
        const db = store.store.db;
        const pending = await db.selectFrom('webhook_deliveries').selectAll().execute();
        assert.equal(pending.length, 1);
        assert.equal(pending[0]!.status, 'pending');
        assert.equal(pending[0]!.attempts, 0);
        assert.equal(pending[0]!.locked_by, null);
        assert.ok(pending[0]!.next_attempt_at !== null && pending[0]!.next_attempt_at <= Date.now());
        assert.deepEqual(await db.selectFrom('webhook_attempts').select('delivery_id').execute(), []);

        // A server started again on the same store delivers it to the receiver, now answering.
        receiver.respond = () => ({ status: 200 });
        server = await startServer(e);
        await receiver.waitFor(2);
        const [first, second] = receiver.received;
        assert.equal(second!.headers['webhook-id'], first!.headers['webhook-id'], 'the same event, the same webhook-id');
        assert.equal(second!.json.event, 'lead.created');
        await waitUntil(async () => (await db.selectFrom('webhook_deliveries').select('status').executeTakeFirst())?.status === 'delivered');
        const attempts = await db.selectFrom('webhook_attempts').select(['attempt', 'status_code']).execute();
        assert.deepEqual(attempts.map((a) => [a.attempt, a.status_code]), [[1, 200]]);
        assert.equal((await terminate(server)).code, 0);
      } finally {
        await server.stop('SIGKILL');
        await receiver.close();
      }
    });

    it('ends a call whose analysis waits on an LLM that never answers, stores its results and exits 0 in time', { timeout: 60_000 }, async () => {
      const llm = await hangingServer();
      // The LLM's own timeouts are a minute: only the shutdown's deadline can end the analysis in time.
      // No start-up probe of the LLM (PROVIDER_PROBE_TIMEOUT_MS=0): the only request it sees is the analysis.
      const e = env({ TTS_PROVIDER: 'fake', STT_PROVIDER: 'fake', LLM_BASE_URL: llm.baseUrl, LLM_TIMEOUT_MS: '60000', PROVIDER_PROBE_TIMEOUT_MS: '0' });
      const key = await createApiKey(store.store);
      const server = await startServer(e);
      try {
        const agentId = await flowAgent(server, key, 'Hello, thanks for calling.');
        const created = await api(server, key, 'POST', '/v2/create-web-call', { agent_id: agentId });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const client = await WebCallClient.join({ url: server.baseUrl, accessToken: created.json.access_token });
        await client.waitFor('agent_stop_talking', 10_000);

        const { code, ms } = await terminate(server);
        const logs = server.lines.join('\n');
        assert.equal(code, 0, logs.slice(-2000));
        assert.ok(ms < SHUTDOWN_TIMEOUT_MS + MARGIN_MS, `exited after ${Math.round(ms)} ms`);
        assert.doesNotMatch(logs, /shutdown timed out/);
        assert.equal(llm.requests, 1, 'the analysis was asked of the LLM');
        assert.match(logs, /"msg":"post-call analysis cut short by the deadline; the embedded analysis is stored"/);
        assert.equal((await client.ended).disconnection_reason, 'server_shutdown');

        const row = await store.store.db
          .selectFrom('calls')
          .select(['call_status', 'disconnection_reason', 'transcript', 'call_analysis'])
          .where('call_id', '=', client.callId)
          .executeTakeFirstOrThrow();
        assert.equal(row.call_status, 'ended');
        assert.equal(row.disconnection_reason, 'server_shutdown');
        assert.match(row.transcript ?? '', /Hello, thanks for calling/);
        // The embedded analysis, which names how the call ended.
        assert.match(JSON.parse(row.call_analysis ?? 'null').call_summary, /Call with 1 agent .*\(server_shutdown\)/);
        const finished = await store.store.db.selectFrom('webhook_events').select(['data']).where('kind', '=', 'call.finished').execute();
        assert.equal(finished.filter((f) => String(f.data).includes(client.callId)).length, 1, 'call.finished recorded');
      } finally {
        await server.stop('SIGKILL');
        await llm.close();
      }
    });
  });
}

// A part that really hangs: the store's server stops answering (SIGSTOP on a throwaway cluster's
// postmaster and backends) while a call is in progress, so the call's results can never be stored.
const pgBin = findPostgresBin();
describe('shutdown of a server process whose store hangs', { skip: pgBin === null ? 'PostgreSQL server binaries not found' : false }, () => {
  it('exits 1 at the bound, naming the step that did not finish and those not started', { timeout: 120_000 }, async () => {
    const cluster = await startCluster(pgBin!);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-shutdown-hang-'));
    const stopped: number[] = [];
    let server: ServerProcess | undefined;
    try {
      const bound = 3_000;
      const e = { DATA_DIR: dataDir, DATABASE_URL: cluster.url, SHUTDOWN_TIMEOUT_MS: String(bound), TTS_PROVIDER: 'fake', STT_PROVIDER: 'fake' };
      const key = JSON.parse((await runCli(['keys', 'create'], e)).stdout).api_key as string;
      server = await startServer(e);
      const agentId = await flowAgent(server, key, 'Hello, thanks for calling.');
      const created = await api(server, key, 'POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const client = await WebCallClient.join({ url: server.baseUrl, accessToken: created.json.access_token });
      await client.waitFor('agent_start_talking', 10_000);

      // The cluster's postmaster (the parent of every backend) and all its children.
      const admin = new pg.Client({ connectionString: cluster.url });
      await admin.connect();
      let backend: number;
      try {
        backend = (await admin.query<{ pid: number }>('select pid from pg_stat_activity where pid <> pg_backend_pid() limit 1')).rows[0]!.pid;
      } finally {
        await admin.end();
      }
      const postmaster = parentOf(backend);
      const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
      assert.ok(children.includes(backend), 'the backends are the postmaster\'s children');
      for (const pid of [postmaster, ...children]) {
        try {
          process.kill(pid, 'SIGSTOP');
          stopped.push(pid);
        } catch {
          // a backend that ended meanwhile (the one this test used)
        }
      }

      const { code, ms } = await terminate(server);
      assert.equal(code, 1);
      assert.ok(ms >= bound && ms < bound + MARGIN_MS, `exited after ${Math.round(ms)} ms`);
      const lines = server.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const timedOut = lines.find((l) => l['msg'] === 'shutdown timed out; exiting');
      assert.ok(timedOut, 'a log line says the shutdown timed out');
      // Storing the call waits on the store: the calls step never ends.
      assert.equal(timedOut['unfinished'], 'calls');
      assert.deepEqual(timedOut['notStarted'], ['http server', 'periodic tasks', 'webhook deliveries', 'speech engines and store', 'server lock']);
      assert.equal(timedOut['timeoutMs'], bound);
    } finally {
      for (const pid of stopped) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // already gone
        }
      }
      await server?.stop('SIGKILL');
      cluster.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
