// A flow's `knowledge` node on the embedded engines, in real time, through the real server and
// the Node client: Flite speaks the caller's question -> WebSocket -> fvad -> PocketSphinx -> the
// knowledge node (lexical retrieval on the store) -> Flite speaks the passage's answer. Offline,
// with no LLM. The found / not-found edges in detail: knowledge-calls.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { type MediaServer, concat, eventually, silence, startMediaServer } from '../media/helpers.ts';
import { POLICIES_MD, base64 } from './corpus.ts';
import { knowledgeFlow } from './knowledge-flow.ts';

for (const kind of STORES) {
  describe(`a knowledge node on the embedded engines (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const flite = new FliteTts();
    before(async () => {
      // PocketSphinx runs in real time: on a loaded machine its transcript may take longer than the default wait.
      s = await startMediaServer(kind.name, { timings: { recognitionTimeoutMs: 20_000 } });
    });
    after(async () => {
      await s.close();
      await flite.close();
    });

    it('answers a spoken question from the knowledge base and takes the found edge', { timeout: 60_000 }, async (t) => {
      if (!hasPocketsphinx()) return t.skip(NO_POCKETSPHINX);
      const kb = await s.api('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Help desk',
        knowledge_base_files: [{ file_name: 'policies.md', content_base64: base64(POLICIES_MD) }],
      });
      assert.equal(kb.status, 201);
      await s.runtime.services.knowledge.settled();
      const agentId = await s.flowAgent(knowledgeFlow(kb.json.knowledge_base_id));
      const parts: Int16Array[] = [];
      for await (const c of flite.synthesize('are you open on sunday', { voiceId: 'flite-kal16' })) parts.push(c);

      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(...parts, silence(900)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const call = await eventually(async () => {
        const got = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        return got.call_status === 'ended' && got.latency ? got : undefined;
      });
      const heard = call.transcript_object.find((u: { role: string }) => u.role === 'user')?.content ?? '';
      assert.match(call.transcript, /On Sundays we are closed\./, `the passage's answer (heard: "${heard}")`);
      assert.match(call.transcript, /Glad to help\. Goodbye\./, 'the found edge');
      assert.equal(call.latency.knowledge_base.num, 1);
    });
  });
}
