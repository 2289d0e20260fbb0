import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { type Store, openStore } from '../../src/storage/store.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

// The create-web-call and update-call fast paths (one guarded INSERT with a remembered agent head,
// a compare-and-set UPDATE) must answer exactly what the slow paths did.

for (const kind of STORES) {
  describe(`update-call compare-and-set on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(() => h.close());

    it('concurrent updates of one call each merge their attributes: none is lost', async () => {
      const { json: call } = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const updates = Array.from({ length: 24 }, (_, i) =>
        h.request({
          method: 'PATCH',
          url: `/v2/update-call/${call.call_id}`,
          key,
          body: { custom_attributes: { [`a${i}`]: i }, override_dynamic_variables: { [`v${i}`]: String(i) } },
        }),
      );
      for (const res of await Promise.all(updates)) assert.equal(res.status, 200);
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key });
      assert.equal(Object.keys(got.json.custom_attributes).length, 24);
      assert.equal(Object.keys(got.json.override_dynamic_variables).length, 24);
      for (let i = 0; i < 24; i++) {
        assert.equal(got.json.custom_attributes[`a${i}`], i);
        assert.equal(got.json.override_dynamic_variables[`v${i}`], String(i));
      }
    });

    it('answers 422 for a call of another account and changes nothing', async () => {
      const { json: call } = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const { apiKey: other } = await h.account();
      const res = await h.request({ method: 'PATCH', url: `/v2/update-call/${call.call_id}`, key: other, body: { metadata: { x: 1 } } });
      assert.equal(res.status, 422);
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${call.call_id}`, key });
      assert.deepEqual(got.json.metadata, {});
    });
  });
}

const postgres = STORES.find((kind) => kind.name === 'postgres')!;

describe('create-web-call with a remembered agent head, two servers on one PostgreSQL', { skip: postgres.skip }, () => {
  let h: Harness;
  let second: { store: Store; runtime: Runtime; app: FastifyInstance };
  let key: string;
  before(async () => {
    h = await startHarness('postgres');
    ({ apiKey: key } = await h.account());
    const store = await openStore({ databaseUrl: h.testStore.databaseUrl, dataDir: h.testStore.dataDir, poolSize: 4 });
    const config = loadConfig({ DATA_DIR: h.testStore.dataDir, PORT: '0' });
    const runtime = await createRuntime(config, { logger: createSilentLogger(), clock: h.clock, store });
    const app = await buildApp(runtime);
    await app.ready();
    second = { store, runtime, app };
  });
  after(async () => {
    await second.app.close();
    await second.runtime.close();
    await second.store.close();
    await h.close();
  });

  const createOnFirst = (agentId: string) => h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
  const onSecond = async (method: 'PATCH' | 'DELETE', url: string, body?: Record<string, unknown>) => {
    const res = await second.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(body ? { payload: body } : {}) });
    return res.statusCode;
  };

  it('a call made after the agent changed on the other server runs on the new version', async () => {
    const { agentId } = await createFlowAgent(h, key);
    assert.equal((await createOnFirst(agentId)).json.agent_version, 1, 'the first server now remembers version 1 as the latest');
    assert.equal(await onSecond('PATCH', `/update-agent/${agentId}`, { agent_name: 'Front desk' }), 200);
    const created = await createOnFirst(agentId);
    assert.equal(created.status, 201);
    assert.equal(created.json.agent_version, 2);
    assert.equal(created.json.agent_name, 'Front desk');
    const got = await h.request({ method: 'GET', url: `/v2/get-call/${created.json.call_id}`, key });
    assert.equal(got.json.agent_version, 2);
    assert.equal((await createOnFirst(agentId)).json.agent_version, 2, 'and remembers the new head');
  });

  it('a call on an agent deleted through the other server is refused with 422 agent_not_found, and no call is stored', async () => {
    const { agentId } = await createFlowAgent(h, key);
    assert.equal((await createOnFirst(agentId)).status, 201);
    assert.equal(await onSecond('DELETE', `/delete-agent/${agentId}`), 204);
    const refused = await createOnFirst(agentId);
    assert.equal(refused.status, 422);
    assert.equal(refused.json.code, 'agent_not_found');
    const listed = await h.request({ method: 'POST', url: '/v2/list-calls', key, body: { filter_criteria: { agent_id: [agentId] } } });
    assert.equal(listed.json.length, 1);
  });

  it('an explicit older version is still served after the agent moved on elsewhere', async () => {
    const { agentId } = await createFlowAgent(h, key);
    assert.equal((await createOnFirst(agentId)).status, 201);
    assert.equal(await onSecond('PATCH', `/update-agent/${agentId}`, { agent_name: 'Later' }), 200);
    const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId, agent_version: 1 } });
    assert.equal(created.status, 201);
    assert.equal(created.json.agent_version, 1);
    assert.equal(created.json.agent_name, 'Reception');
  });
});
