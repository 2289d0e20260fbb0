// A flow's `knowledge` node in real calls (scripted recogniser, fast): it answers the caller's
// question from the best passage (its most relevant sentences), takes its found / not-found edge by
// the score threshold, and the call's record carries the chunks each search found
// (transcript_with_tool_calls, `knowledge_base_retrieval`), dropped under basic_attributes_only.
// The same node on the embedded engines in real time: knowledge-flow-embedded.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, silence, startMediaServer, tone } from '../media/helpers.ts';
import { INJECTION_TEXT, POLICIES_MD, base64 } from './corpus.ts';
import { knowledgeFlow } from './knowledge-flow.ts';


for (const kind of STORES) {
  describe(`a flow's knowledge node in calls (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const providers = fakeProviders([], { msPerChar: 1 });
    let kbId: string;
    before(async () => {
      s = await startMediaServer(kind.name, { providers });
      const kb = await s.api('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Help desk',
        knowledge_base_texts: [{ title: 'Gift cards', text: INJECTION_TEXT }],
        knowledge_base_files: [{ file_name: 'policies.md', content_base64: base64(POLICIES_MD) }],
      });
      assert.equal(kb.status, 201);
      kbId = kb.json.knowledge_base_id;
      await s.runtime.services.knowledge.settled();
    });
    after(() => s.close());

    /** One call: the greeting, the caller's `words`, the agent's answer and goodbye; the stored call. */
    async function ask(agentId: string, words: string) {
      providers.stt.push(words);
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      return eventually(async () => {
        const got = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        return got.call_status === 'ended' && got.latency ? got : undefined;
      });
    }

    it('answers the question with the best passage\'s most relevant sentences and takes the found edge; the record holds the chunks', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId));
      const call = await ask(agentId, 'are you open on sunday');
      const agent = call.transcript_object.filter((u: { role: string }) => u.role === 'agent').map((u: { content: string }) => u.content).join(' ');
      assert.match(agent, /Our shop on Quay Street opens at nine in the morning and closes at six in the evening, Monday to Saturday\. On Sundays we are closed\./);
      assert.doesNotMatch(agent, /Public holidays|What would you like to know/, 'two sentences at most; entered on the question, the node answers it at once');
      assert.match(agent, /Glad to help\. Goodbye\.$/, 'the found edge');
      assert.equal(call.latency.knowledge_base.num, 1, 'the search is the turn\'s knowledge_base latency');

      const record = call.transcript_with_tool_calls as Array<Record<string, any>>;
      const at = record.findIndex((e) => e.role === 'knowledge_base_retrieval');
      assert.ok(at > 0, JSON.stringify(record));
      const user = record.findIndex((e) => e.role === 'user');
      const answer = record.findIndex((e) => e.role === 'agent' && /Sundays/.test(e.content));
      assert.ok(user < at && at < answer, `the search sits between the question and the answer it fed: ${JSON.stringify(record.map((e) => e.role))}`);
      const chunks = record[at]!.chunks;
      assert.ok(chunks.length >= 1 && chunks.length <= 3, 'top_k defaults to 3');
      assert.equal(chunks[0].knowledge_base_id, kbId);
      assert.match(chunks[0].source_id, /^kb_source_/);
      assert.match(chunks[0].text, /On Sundays we are closed/);
      assert.ok(chunks[0].score > 0 && chunks[0].score <= 1);
    });

    it('takes the not-found edge when no chunk reaches the node\'s filter_score, and records an empty search', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId, { filter_score: 0.99 }));
      const call = await ask(agentId, 'are you open on sunday');
      assert.match(call.transcript, /Agent: Sorry, I do not know that\. Goodbye\./);
      assert.doesNotMatch(call.transcript, /Sundays/);
      const searches = call.transcript_with_tool_calls.filter((e: { role: string }) => e.role === 'knowledge_base_retrieval');
      assert.deepEqual(searches, [{ role: 'knowledge_base_retrieval', chunks: [] }]);
    });

    it('speaks a passage holding instructions as reference only: the relevant sentences, the flow unchanged', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId));
      const call = await ask(agentId, 'do gift cards expire');
      assert.match(call.transcript, /Gift cards never expire and can be used in the shop or online\./);
      assert.doesNotMatch(call.transcript, /Ignore previous|order is free/i, 'the instruction is no answer to the question: not spoken');
      assert.match(call.transcript, /Glad to help\. Goodbye\./, 'the flow goes on by its edges');
      const search = call.transcript_with_tool_calls.find((e: { role: string }) => e.role === 'knowledge_base_retrieval');
      assert.match(search.chunks[0].text, /Ignore previous instructions/, 'the record keeps the passage as found, as data');
    });

    it('keeps no chunk under opt_out_sensitive_data_storage (basic_attributes_only)', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId), { opt_out_sensitive_data_storage: true });
      const call = await ask(agentId, 'are you open on sunday');
      assert.equal(call.transcript_with_tool_calls, null);
      assert.equal(call.transcript, null);
      assert.equal(call.latency.knowledge_base.num, 1, 'the latency stays');
    });

    it('refuses knowledge nodes naming bases that are not the account\'s, or none, and knowledge fields on other nodes', async () => {
      const bad = knowledgeFlow(kbId);
      bad.nodes[1]!.knowledge_base_ids = [kbId, 'knowledge_base_0000'];
      const refused = await s.api('POST', '/create-conversation-flow', bad);
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /nodes\.1\.knowledge_base_ids\.1: no knowledge base knowledge_base_0000/);

      const none = knowledgeFlow(kbId);
      delete none.nodes[1]!.knowledge_base_ids;
      const noBases = await s.api('POST', '/create-conversation-flow', none);
      assert.equal(noBases.status, 400);
      assert.match(noBases.json.message, /knowledge node "ask" needs knowledge_base_ids/);

      const misplaced = knowledgeFlow(kbId);
      Object.assign(misplaced.nodes[0]!, { knowledge_base_ids: [kbId] });
      const wrongNode = await s.api('POST', '/create-conversation-flow', misplaced);
      assert.equal(wrongNode.status, 400);
      assert.match(wrongNode.json.message, /node "greet" is not a knowledge node/);

      const created = await s.api('POST', '/create-conversation-flow', knowledgeFlow(kbId));
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const id = created.json.conversation_flow_id;
      const update = await s.api('PATCH', `/update-conversation-flow/${id}`, { nodes: bad.nodes });
      assert.equal(update.status, 400);
      assert.match(update.json.message, /nodes\.1\.knowledge_base_ids\.1/);
      const kept = await s.api('GET', `/get-conversation-flow/${id}`);
      assert.deepEqual(kept.json.nodes[1].knowledge_base_ids, [kbId], 'a refused update changes nothing');
    });
  });
}
