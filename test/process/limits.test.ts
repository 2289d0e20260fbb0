// Two server processes on one PostgreSQL act as one service for an account's limits: the
// create-web-call rate limit is one token bucket in the database, and the concurrency limit
// counts the calls made through either server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli, startServer, type ServerProcess } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

const pg = STORES.find((s) => s.name === 'postgres')!;

describe('account limits across two server processes on one PostgreSQL', { skip: pg.skip }, () => {
  let store: TestStore;
  let servers: ServerProcess[] = [];
  let env: Record<string, string>;
  before(async () => {
    store = await openTestStore('postgres');
    env = { DATA_DIR: store.dataDir, DATABASE_URL: store.databaseUrl as string, LOG_LEVEL: 'warn' };
    servers = await Promise.all([startServer({ ...env, LOG_LEVEL: 'info' }), startServer({ ...env, LOG_LEVEL: 'info' })]);
  });
  after(async () => {
    for (const server of servers) await server.stop('SIGKILL');
    await store.close();
  });

  async function keyWithAgent(args: string[]): Promise<{ key: string; agentId: string }> {
    const created = await runCli(['keys', 'create', ...args], env);
    assert.equal(created.code, 0, created.stderr);
    const key = (JSON.parse(created.stdout) as { api_key: string }).api_key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const flow = await fetch(`${servers[0]!.baseUrl}/create-conversation-flow`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ start_node_id: 'n', nodes: [{ id: 'n', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } }] }),
    });
    const flowId = ((await flow.json()) as { conversation_flow_id: string }).conversation_flow_id;
    const agent = await fetch(`${servers[0]!.baseUrl}/create-agent`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ response_engine: { type: 'conversation_flow', conversation_flow_id: flowId } }),
    });
    return { key, agentId: ((await agent.json()) as { agent_id: string }).agent_id };
  }

  /** `n` create-web-calls at once, alternating between the servers; their statuses and codes. */
  async function burst(n: number, key: string, agentId: string) {
    return Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await fetch(`${servers[i % 2]!.baseUrl}/v2/create-web-call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ agent_id: agentId }),
        });
        return { status: res.status, code: ((await res.json()) as { code?: string }).code };
      }),
    );
  }

  it('a key limited to 20 creates a minute gets exactly 20 x 201 of 60 across both', async () => {
    const { key, agentId } = await keyWithAgent(['--rate-limit', '20']);
    const started = performance.now();
    const answers = await burst(60, key, agentId);
    const elapsedMs = performance.now() - started;
    // The bucket refills one token every 3 s: a slower burst may rightly get one more per 3 s.
    const allowed = 20 + Math.floor(elapsedMs / 3_000);
    const created = answers.filter((a) => a.status === 201).length;
    assert.ok(created >= 20 && created <= allowed, `${created} created in ${Math.round(elapsedMs)} ms`);
    if (elapsedMs < 3_000) assert.equal(created, 20);
    assert.ok(answers.filter((a) => a.status !== 201).every((a) => a.status === 429 && a.code === 'rate_limited'));
  });

  it('the concurrency limit holds under a concurrent burst through both', async () => {
    const { key, agentId } = await keyWithAgent(['--rate-limit', '10000', '--concurrency-limit', '5']);
    const answers = await burst(40, key, agentId);
    assert.equal(answers.filter((a) => a.status === 201).length, 5);
    assert.ok(answers.filter((a) => a.status !== 201).every((a) => a.status === 429 && a.code === 'concurrency_limit_reached'));
  });
});
