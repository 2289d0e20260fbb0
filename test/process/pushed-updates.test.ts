// Two server processes on one PostgreSQL: an update-call through one reaches the call held by the
// other at once (LISTEN/NOTIFY, not a poll), a key revoked through the CLI is refused by both at
// once despite their key caches, and after the LISTEN connections are killed with
// pg_terminate_backend, the servers reconnect, catch up on what they missed, and updates still arrive.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { LISTENER_APPLICATION_NAME } from '../../src/storage/pg-notifications.ts';
import { runCli, startServer, type ServerProcess } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';

const pgStore = STORES.find((s) => s.name === 'postgres')!;
const PUSH_BOUND_MS = 250;

interface LogLine {
  time: number;
  msg: string;
  callId?: string;
  source?: string;
}

/** The JSON log lines of `server` with message `msg` (and the call id, when given). */
function logged(server: ServerProcess, msg: string, callId?: string): LogLine[] {
  return server.lines
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.msg === msg && (callId === undefined || line.callId === callId));
}

async function waitFor<T>(find: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (performance.now() > until) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('changes reach the right server at once (two processes, one PostgreSQL)', { skip: pgStore.skip }, () => {
  let store: TestStore;
  let env: Record<string, string>;
  let holder: ServerProcess;
  let other: ServerProcess;
  let client: WebCallClient | undefined;
  let key: string;
  let keyId: string;
  let rx: Receiver;
  before(async () => {
    store = await openTestStore('postgres');
    rx = await Receiver.start();
    // Keys are trusted for a minute: only the revocation's notification can end that early.
    // The webhook worker polls once a minute: only a notification can wake it sooner.
    env = {
      DATA_DIR: store.dataDir,
      DATABASE_URL: store.databaseUrl as string,
      STT_PROVIDER: 'fake',
      TTS_PROVIDER: 'fake',
      VAD_PROVIDER: 'energy',
      API_KEY_CACHE_TTL_MS: '60000',
      WEBHOOK_POLL_INTERVAL_MS: '60000',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    };
    const created = JSON.parse((await runCli(['keys', 'create'], env)).stdout) as { api_key: string; key_id: string };
    key = created.api_key;
    keyId = created.key_id;
    // Only the holder delivers webhooks.
    [holder, other] = await Promise.all([startServer({ ...env, LOG_LEVEL: 'debug' }), startServer({ ...env, WEBHOOK_WORKER: 'false' })]);
  });
  after(async () => {
    client?.close();
    await holder.stop('SIGKILL');
    await other.stop('SIGKILL');
    await rx.close();
    await store.close();
  });

  const api = async (server: ServerProcess, method: string, route: string, body?: unknown) => {
    const res = await fetch(`${server.baseUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json: any = await res.json();
    return { status: res.status, json };
  };

  /** Updates the call through `other`; resolves when `holder` has applied that update, with the delay after the answer. */
  async function updateAndSeeApplied(callId: string, who: string): Promise<number> {
    const before = logged(holder, 'call variables refreshed', callId).length;
    const updated = await api(other, 'PATCH', `/v2/update-call/${callId}`, { override_dynamic_variables: { who } });
    const answeredAt = Date.now();
    assert.equal(updated.status, 200);
    const applied = await waitFor(() => logged(holder, 'call variables refreshed', callId)[before], 5_000, 'the holder applies the update');
    return applied.time - answeredAt;
  }

  it('an update-call through one server applies on the call held by the other within 250 ms', { timeout: 60_000 }, async () => {
    const flow = await api(holder, 'POST', '/create-conversation-flow', {
      start_node_id: 'n',
      default_dynamic_variables: { who: 'nobody' },
      nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hi {{who}}.' } }],
    });
    const agent = await api(holder, 'POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
    const call = await api(other, 'POST', '/v2/create-web-call', { agent_id: agent.json.agent_id });
    assert.equal(call.status, 201);
    client = await WebCallClient.join({ url: holder.baseUrl, accessToken: call.json.access_token });
    await client.waitFor('agent_stop_talking', 10_000);

    const delays: number[] = [];
    for (const who of ['Ada', 'Grace', 'Edsger']) delays.push(await updateAndSeeApplied(client.callId, who));
    assert.ok(delays.every((ms) => ms <= PUSH_BOUND_MS), `applied ${delays.join(', ')} ms after update-call answered`);
    assert.ok(logged(holder, 'call variables refreshed', client.callId).every((line) => line.source === 'pushed'));
    const row = await store.store.db.selectFrom('calls').select('override_dynamic_variables').where('call_id', '=', client.callId).executeTakeFirstOrThrow();
    assert.equal(JSON.parse(row.override_dynamic_variables ?? '{}').who, 'Edsger');
  });

  it('after pg_terminate_backend on the LISTEN connections, the servers reconnect, catch up, and updates still arrive', { timeout: 60_000 }, async () => {
    const callId = client!.callId;
    const admin = new pg.Client({ connectionString: store.databaseUrl as string });
    await admin.connect();
    try {
      // This test's database only: other tests' servers listen on the same cluster meanwhile.
      const killed = await admin.query(
        'select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = $1 and datname = current_database()',
        [LISTENER_APPLICATION_NAME],
      );
      assert.equal(killed.rowCount, 2, 'one LISTEN connection per server');
    } finally {
      await admin.end();
    }
    // An update while the holder may not be listening: its catch-up read after reconnecting applies it.
    const before = logged(holder, 'call variables refreshed', callId).length;
    assert.equal((await api(other, 'PATCH', `/v2/update-call/${callId}`, { override_dynamic_variables: { who: 'missed' } })).status, 200);
    await waitFor(() => logged(holder, 'notification connection restored; catching up')[0], 10_000, 'the holder reconnects');
    await waitFor(() => logged(holder, 'call variables refreshed', callId)[before], 10_000, 'the holder catches up');
    assert.ok(logged(holder, 'notification connection lost; reconnecting').length >= 1);

    // And pushes arrive again, as fast as before.
    const delay = await updateAndSeeApplied(callId, 'after');
    assert.ok(delay <= PUSH_BOUND_MS, `applied ${delay} ms after update-call answered`);
  });

  it('an event recorded through one server wakes the delivery worker of the other at once, after the reconnect too', { timeout: 60_000 }, async () => {
    const hook = await api(other, 'POST', '/api/v1/webhooks/set.php', { url: rx.url('/wake'), events: ['lead.created'] });
    assert.equal(hook.status, 201);
    const lead = await api(other, 'POST', '/api/v1/leads/create.php', { name: 'Ada', phone: '555-0100' });
    assert.equal(lead.status, 201);
    const createdAt = performance.now();
    await rx.waitFor(1, 5_000);
    const ms = performance.now() - createdAt;
    assert.ok(ms < 1_000, `delivered ${Math.round(ms)} ms after the event, not at the next poll a minute later`);
  });

  it('a key revoked through the CLI is refused by both servers at once, despite their caches', { timeout: 60_000 }, async () => {
    await waitFor(() => logged(other, 'notification connection restored; catching up')[0], 10_000, 'the other server listens again');
    for (const server of [holder, other]) assert.equal((await api(server, 'GET', '/list-agents')).status, 200, 'the key is cached');
    const revoked = await runCli(['keys', 'revoke', keyId], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = performance.now();
    for (const server of [holder, other]) {
      let status = (await api(server, 'GET', '/list-agents')).status;
      while (status === 200 && performance.now() - revokedAt < PUSH_BOUND_MS) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = (await api(server, 'GET', '/list-agents')).status;
      }
      assert.equal(status, 401, `refused within ${PUSH_BOUND_MS} ms of the revocation`);
    }
  });
});
