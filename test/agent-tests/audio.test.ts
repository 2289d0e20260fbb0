// Audio mode: the script is spoken by a Flite voice into a real call session on the in-process
// endpoint (voice activity, PocketSphinx, end of turn, the flow, Flite for the agent), and the
// call leaves nothing among the account's calls. Real time: a few seconds per case.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { flowAgent, runToEnd } from './helpers.ts';

const FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. Sales or support?' },
      edges: [
        { id: 's', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales'] } },
        { id: 'h', destination_node_id: 'support', transition_condition: { type: 'keyword', keywords: ['support'] } },
      ],
    },
    { id: 'sales', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
    { id: 'support', type: 'end', instruction: { type: 'static_text', text: 'Support it is. Goodbye.' } },
  ],
};

for (const kind of STORES) {
  describe(`agent tests in audio mode (${kind.name})`, { skip: kind.skip || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      // A recogniser that falls behind on a loaded machine is given time rather than failing the call (error_asr).
      h = await startHarness(kind.name, { STT_PROVIDER: 'pocketsphinx', TTS_PROVIDER: 'flite', STT_TIMEOUT_MS: '60000' });
      key = (await h.account()).apiKey;
    });
    after(async () => h?.close());

    it('a spoken script takes the keyword branch through the whole pipeline; nothing among real calls', { timeout: 150_000 }, async () => {
      const agentId = await flowAgent(h, key, FLOW);
      const created = await h.request({
        method: 'POST', url: '/create-test-case', key,
        body: {
          agent_id: agentId, mode: 'audio', caller_voice_id: 'flite-kal16',
          caller: { script: [{ say: 'i want sales please' }] },
          assertions: [
            { type: 'node_path', node_ids: ['greet', 'sales'] },
            { type: 'transcript_contains', role: 'user', text: 'sales' },
            { type: 'transcript_contains', role: 'agent', text: 'Sales it is' },
            { type: 'disconnection_reason', value: 'agent_hangup' },
          ],
        },
      });
      assert.equal(created.status, 201, created.raw);
      const run = await runToEnd(h, key, { agent_id: agentId });
      const [result] = run.results;
      assert.equal(result.error, null);
      assert.equal(result.passed, true, JSON.stringify({ assertions: result.assertions, transcript: result.transcript }));
      assert.equal(result.mode, 'audio');
      assert.ok(result.latency.values_ms.length >= 1);
      assert.deepEqual((await h.request({ method: 'POST', url: '/v2/list-calls', key, body: {} })).json, []);
    });
  });
}
