// Test runs whose server was lost (issue 28): a run is held under a lease like a call; once the
// lease lapses another server (or the next start) finishes it, each unreported case failed with
// the reason, and test_run.finished is recorded once, on both stores.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { AgentTestRepository } from '../../src/storage/agent-test.repository.ts';
import { RUN_LOST_ERROR } from '../../src/services/agent-test.service.ts';
import { docBlocks, flowAgent, runToEnd } from './helpers.ts';

const [FLOW] = docBlocks('flow');

for (const kind of STORES) {
  describe(`test runs of a lost server (${kind.name})`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
      agentId = await flowAgent(h, key, FLOW);
    });
    after(async () => h?.close());
    const req = (method: 'GET' | 'POST', url: string, body?: unknown) => h.request({ method, url, key, body });

    it('finishes a run once its holder stopped renewing it: every case failed with the reason, one test_run.finished', async () => {
      const created = await req('POST', '/create-test-case', { agent_id: agentId, name: 'order status', caller: { script: [{ say: 'hello' }] }, assertions: [] });
      assert.equal(created.status, 201, created.raw);
      const caseId = created.json.test_case_id as string;
      const db = h.runtime.store.db;
      const accountId = (await db.selectFrom('test_cases').select('account_id').where('test_case_id', '=', caseId).executeTakeFirstOrThrow()).account_id;
      // A run another server started, then was lost with: its lease runs out 15 s from now.
      const ttl = h.config.callLeaseTtlMs;
      const run = {
        test_run_id: 'test_run_00000000000000000000000000000001',
        agent_id: agentId,
        agent_version: null,
        status: 'running' as const,
        test_case_ids: [caseId, 'test_00000000000000000000000000000000'],
        passed: 0,
        failed: 0,
        results: [],
        created_at: h.clock.now(),
        finished_at: null,
      };
      await new AgentTestRepository(db).insertRun(accountId, run, { holder: 'server_lost', expiresAt: h.clock.now() + ttl });
      const tests = h.runtime.services.tests;
      assert.equal(await tests.recoverLapsed(), 0, 'a run whose lease is current is left to its holder');
      assert.equal((await req('GET', `/get-test-run/${run.test_run_id}`)).json.status, 'running');

      h.clock.advance(ttl + 1);
      assert.equal(await tests.recoverLapsed(), 1);
      const got = await req('GET', `/get-test-run/${run.test_run_id}`);
      assert.equal(got.json.status, 'complete', got.raw);
      assert.deepEqual([got.json.passed, got.json.failed], [0, 2]);
      assert.deepEqual(
        got.json.results.map((r: any) => [r.test_case_id, r.name, r.passed, r.error]),
        [
          [caseId, 'order status', false, RUN_LOST_ERROR],
          ['test_00000000000000000000000000000000', '(deleted test case)', false, RUN_LOST_ERROR],
        ],
      );
      assert.equal(await tests.recoverLapsed(), 0, 'finished once');
      const events = await db.selectFrom('webhook_events').select(['kind', 'data']).where('account_id', '=', accountId).execute();
      const finished = events.filter((e) => e.kind === 'test_run.finished' && String(e.data).includes(run.test_run_id));
      assert.equal(finished.length, 1, JSON.stringify(events.map((e) => e.kind)));
    });

    it('never takes over a run this server is still playing, and a run it finished is not finished again', async () => {
      await req('POST', '/create-test-case', { agent_id: agentId, caller: { script: [{ say: 'hello' }] }, assertions: [] });
      const done = await runToEnd(h, key, { agent_id: agentId });
      assert.equal(done.status, 'complete');
      h.clock.advance(h.config.callLeaseTtlMs * 10);
      assert.equal(await h.runtime.services.tests.recoverLapsed(), 0);
      assert.equal((await req('GET', `/get-test-run/${done.test_run_id}`)).json.failed, done.failed);
    });
  });
}
