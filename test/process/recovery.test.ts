// A server process killed with SIGKILL mid-call: the call is not left `ongoing`. On SQLite the
// next start on the same DATA_DIR ends it at once; on PostgreSQL the servers still alive end it
// once its lease lapses. Either way it ends `error_server_lost` with the transcript said before the
// crash (checkpointed after every utterance), and call.finished is recorded exactly once, however
// many servers race to end it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { startServer, type ServerProcess } from '../helpers/process.ts';
import { STORES, type TestStore, createApiKey, openTestStore } from '../helpers/stores.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };
const GREETING = 'Hello, thanks for calling the recovery desk.';

/** Polls `check` every 50 ms until it holds; throws after `timeoutMs`. */
async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > until) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function api(server: ServerProcess, key: string, method: string, route: string, body?: unknown) {
  const res = await fetch(`${server.baseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

/** A flow agent that greets and then listens (the call stays up until the test ends it). */
async function listeningAgent(server: ServerProcess, key: string): Promise<string> {
  const flow = await api(server, key, 'POST', '/create-conversation-flow', {
    start_node_id: 'greet',
    nodes: [{ id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: GREETING } }],
  });
  assert.equal(flow.status, 201, JSON.stringify(flow.json));
  const agent = await api(server, key, 'POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
  assert.equal(agent.status, 201, JSON.stringify(agent.json));
  return agent.json.agent_id as string;
}

for (const kind of STORES) {
  describe(`a call whose server is killed (${kind.name})`, { skip: kind.skip }, () => {
    let store: TestStore;
    const servers: ServerProcess[] = [];
    const clients: WebCallClient[] = [];
    before(async () => {
      store = await openTestStore(kind.name);
    });
    after(async () => {
      for (const client of clients) client.close();
      for (const server of servers) await server.stop('SIGKILL');
      await store.close();
    });
    const env = (extra: Record<string, string> = {}) => ({
      DATA_DIR: store.dataDir,
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
      ...FAKE_ENGINES,
      ...extra,
    });
    const start = async (extra: Record<string, string> = {}) => {
      const server = await startServer(env(extra));
      servers.push(server);
      return server;
    };
    const db = () => store.store.db;
    const callRow = (callId: string) => db().selectFrom('calls').selectAll().where('call_id', '=', callId).executeTakeFirstOrThrow();
    const finishedEvents = async (callId: string) =>
      (await db().selectFrom('webhook_events').select('data').where('kind', '=', 'call.finished').execute()).filter((e) => e.data.includes(callId)).length;

    /** Joins a call on `server` and waits until its greeting is checkpointed and 2 s of audio recorded. */
    async function callInProgress(server: ServerProcess, key: string): Promise<string> {
      const agentId = await listeningAgent(server, key);
      const created = await api(server, key, 'POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const client = await WebCallClient.join({ url: server.baseUrl, accessToken: created.json.access_token });
      clients.push(client);
      const callId = client.callId;
      await waitUntil(
        async () => ((await db().selectFrom('call_leases').select('checkpoint').where('call_id', '=', callId).executeTakeFirst())?.checkpoint ?? '').includes(GREETING),
        15_000,
        'the greeting is checkpointed',
      );
      return callId;
    }

    if (kind.name === 'sqlite') {
      it('is ended at the next start on the same DATA_DIR with what was said, its recording, and call.finished once', { timeout: 90_000 }, async () => {
        const key = await createApiKey(store.store);
        const first = await start();
        const callId = await callInProgress(first, key);
        const tracks = path.join(store.dataDir, 'recordings', `${callId}.user.tmp`);
        await waitUntil(() => fs.existsSync(tracks) && fs.statSync(tracks).size > 0, 15_000, 'the first 2 s of audio reach the disk');

        await first.stop('SIGKILL');
        assert.equal((await callRow(callId)).call_status, 'ongoing', 'nothing ended it yet');

        const second = await start();
        await waitUntil(async () => (await callRow(callId)).call_status !== 'ongoing', 10_000, 'the restarted server ends the call');
        const row = await callRow(callId);
        assert.equal(row.call_status, 'error');
        assert.equal(row.disconnection_reason, 'error_server_lost');
        assert.match(row.transcript ?? '', new RegExp(`Agent: ${GREETING}`));
        assert.equal(JSON.parse(row.transcript_object ?? '[]')[0].content, GREETING);
        assert.equal(JSON.parse(row.call_analysis ?? '{}').call_successful, false);
        assert.equal(row.recording_path, path.join('recordings', `${callId}.wav`));
        assert.ok(fs.statSync(path.join(store.dataDir, row.recording_path)).size > 44 + 2 * 16_000 * 4, 'at least 2 s of stereo audio');
        assert.equal(fs.existsSync(tracks), false, 'the track files are gone');
        assert.deepEqual(await db().selectFrom('call_leases').select('call_id').execute(), [], 'no lease is left');
        assert.equal(await finishedEvents(callId), 1);

        // Another start (and the periodic sweeps meanwhile) end nothing twice.
        await second.stop('SIGKILL');
        const third = await start({ CALL_RECOVERY_INTERVAL_MS: '100' });
        await new Promise((resolve) => setTimeout(resolve, 500));
        assert.equal(await finishedEvents(callId), 1, 'call.finished exactly once');
        assert.equal(await third.stop('SIGTERM'), 0);
      });
    } else {
      it('is ended by the servers still alive once its lease lapses, by one of them, call.finished once', { timeout: 90_000 }, async () => {
        const fast = { CALL_LEASE_TTL_MS: '1500', CALL_RECOVERY_INTERVAL_MS: '100' };
        const key = await createApiKey(store.store);
        const [holder, one, two] = await Promise.all([start(fast), start(fast), start(fast)]);
        const callId = await callInProgress(holder, key);
        // The holder renews its lease: the others leave the call alone well past one TTL.
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        assert.equal((await callRow(callId)).call_status, 'ongoing', 'a live holder keeps its call');

        await holder.stop('SIGKILL');
        const killedAt = performance.now();
        await waitUntil(async () => (await callRow(callId)).call_status !== 'ongoing', 30_000, 'a surviving server ends the call');
        const tookMs = performance.now() - killedAt;
        const row = await callRow(callId);
        assert.equal(row.call_status, 'error');
        assert.equal(row.disconnection_reason, 'error_server_lost');
        assert.match(row.transcript ?? '', new RegExp(`Agent: ${GREETING}`));
        assert.ok(tookMs < 30_000, `ended ${Math.round(tookMs)} ms after the kill`);

        // Both survivors sweep every 100 ms: they race for the call, and one of them ends it.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        assert.equal(await finishedEvents(callId), 1, 'call.finished exactly once');
        const enders = [one, two].filter((server) => server.lines.some((line) => line.includes('"call of a lost server ended"')));
        assert.equal(enders.length, 1, 'one server ended it');
      });
    }
  });
}
