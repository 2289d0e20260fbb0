// docs/testing-agents.md's worked example, run as written: the flow and the two cases are read
// from the document's `json flow` / `json case` blocks; the first passes, the second fails on the
// assertion the document shows, and keeps the lead its flow made out of the account's lists.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { docBlocks, flowAgent, runToEnd } from './helpers.ts';

for (const kind of STORES) {
  describe(`the worked example of docs/testing-agents.md (${kind.name})`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
    });
    after(async () => h?.close());

    it('passes the first case and fails the second as the document says', async () => {
      const [flow] = docBlocks('flow');
      const cases = docBlocks('case');
      assert.equal(cases.length, 2);
      const agentId = await flowAgent(h, key, flow);
      for (const c of cases) {
        const created = await h.request({ method: 'POST', url: '/create-test-case', key, body: { ...c, agent_id: agentId } });
        assert.equal(created.status, 201, created.raw);
      }
      const run = await runToEnd(h, key, { agent_id: agentId });
      assert.equal(run.status, 'complete');
      assert.equal(run.passed, 1);
      assert.equal(run.failed, 1);
      const [first, second] = run.results;
      assert.equal(first.passed, true, JSON.stringify(first.assertions));
      assert.deepEqual(first.node_path, ['greet', 'ask_order', 'lookup', 'tell']);
      assert.equal(first.transcript[1].dtmf, true);
      assert.equal(second.passed, false);
      assert.deepEqual(second.assertions[1], { type: 'tool_called', passed: false, expected: { name: 'lookup_order' }, actual: [] });
      assert.equal(second.leads.length, 1);
      assert.equal(second.leads[0].name, 'Ada');
      const leads = await h.request({ method: 'GET', url: '/api/v1/leads/list.php', key });
      assert.deepEqual(leads.json.leads, []);
    });
  });
}
