// Knowledge bases in calls: a service LLM naming knowledge bases gets, before its answer to each
// caller turn, the best chunks as reference material (a user message after the system prompt,
// marked as information, not instructions), through real calls against a local OpenAI-compatible
// chat server; the call's latency carries the retrieval time (latency.knowledge_base), and its
// transcript_with_tool_calls the chunks each turn used. A custom LLM naming knowledge bases gets the
// chunks in response_required as `knowledge_base_chunks`, beside the transcript, through a local
// server speaking Retell's LLM WebSocket protocol. A flow's `knowledge` node answers the caller's
// question from the best passage (its most relevant sentences), takes its found / not-found edge by
// the score threshold, and its searches are recorded too, dropped under basic_attributes_only (the
// same node on the embedded engines in real time: knowledge-flow-embedded.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { REFERENCE_PREAMBLE } from '../../src/voice/engines/context.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, silence, startMediaServer, tone } from '../media/helpers.ts';
import { ChatServer } from './chat-server.ts';
import { LlmServer, send, withoutWords } from '../media/llm-server.ts';
import { INJECTION_TEXT, POLICIES_MD, base64 } from './corpus.ts';
import { knowledgeFlow } from './knowledge-flow.ts';

for (const kind of STORES) {
  describe(`knowledge bases in calls: service LLMs, custom LLMs, flows' knowledge nodes (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const chat = new ChatServer();
    const socketLlm = new LlmServer();
    const providers = fakeProviders([], { msPerChar: 1 });
    let kbId: string;
    before(async () => {
      providers.llm = new OpenAiChatLlm({ baseUrl: await chat.listen(), model: 'test-model', maxRetries: 0 });
      s = await startMediaServer(kind.name, { providers, env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' } });
      const kb = await s.api('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Help desk',
        knowledge_base_texts: [{ title: 'Gift cards', text: INJECTION_TEXT }],
        knowledge_base_files: [{ file_name: 'policies.md', content_base64: base64(POLICIES_MD) }],
      });
      assert.equal(kb.status, 201);
      kbId = kb.json.knowledge_base_id;
      await s.runtime.services.knowledge.settled();
    });
    after(async () => {
      await s.close();
      await chat.close();
      await socketLlm.close();
    });

    async function llmAgent(llm: Record<string, unknown>): Promise<string> {
      const created = await s.api('POST', '/create-service-llm', { begin_message: 'Harbor Bikes, hello.', general_prompt: 'You answer questions about the shop.', ...llm });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'service_llm', llm_id: created.json.llm_id } });
      return agent.json.agent_id as string;
    }

    async function ask(agentId: string, words: string) {
      chat.requests.length = 0;
      providers.stt.push(words);
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      const replied = client.next((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      await replied;
      await client.hangup();
      const call = await eventually(async () => {
        const got = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        return got.call_status === 'ended' && got.latency ? got : undefined;
      });
      return call;
    }

    it('puts the best passages in the request as reference material, instructions in them included as text only', { timeout: 30_000 }, async () => {
      chat.answer = () => 'We are closed on Sundays.';
      const agentId = await llmAgent({ knowledge_base_ids: [kbId], kb_config: { top_k: 2 } });
      const call = await ask(agentId, 'are you open on sunday');
      assert.equal(call.latency.knowledge_base.num, 1, 'one turn searched: the retrieval time is the call\'s knowledge_base latency');
      const messages = chat.requests[0]!.messages;
      assert.equal(messages[0]!.role, 'system');
      assert.doesNotMatch(messages[0]!.content!, /Sunday|Ignore previous/i, 'nothing retrieved reaches the system prompt');
      const reference = messages[1]!;
      assert.equal(reference.role, 'user');
      assert.ok(reference.content!.startsWith(REFERENCE_PREAMBLE));
      assert.match(reference.content!, /\[1\] \(source: Harbor Bikes help > Opening hours\)\nOur shop on Quay Street/);
      assert.equal(messages.at(-1)!.content, 'are you open on sunday', "the caller's words come last");
      const record = call.transcript_with_tool_calls as Array<Record<string, any>>;
      const search = record.findIndex((e) => e.role === 'knowledge_base_retrieval');
      assert.ok(search > record.findIndex((e) => e.role === 'user') && search < record.findIndex((e) => e.content === 'We are closed on Sundays.'), JSON.stringify(record));
      const passages = reference.content!.match(/^\[\d+\]/gm)!.length;
      assert.equal(record[search]!.chunks.length, passages, 'the record holds the chunks the request carried');
      assert.match(record[search]!.chunks[0].text, /^Our shop on Quay Street/);
      assert.equal(record[search]!.chunks[0].knowledge_base_id, kbId);

      chat.requests.length = 0;
      await ask(agentId, 'do gift cards expire');
      const injected = chat.requests[0]!.messages;
      const holding = injected.filter((m) => m.content?.includes('Ignore previous instructions'));
      assert.equal(holding.length, 1, 'the passage appears once');
      assert.equal(holding[0]!.role, 'user');
      assert.ok(holding[0]!.content!.startsWith(REFERENCE_PREAMBLE), 'inside the reference message, after the preamble that says it is not instructions');
      assert.equal(injected[0]!.role, 'system');
      assert.doesNotMatch(injected[0]!.content!, /Ignore previous/);
    });

    it("gives a flow's conversation nodes the passages of the flow's knowledge bases (Retell's flow-level knowledge_base_ids), and refuses ids that are not the account's", { timeout: 30_000 }, async () => {
      chat.answer = () => 'We are closed on Sundays.';
      const flow = {
        start_node_id: 'help',
        knowledge_base_ids: [kbId],
        kb_config: { top_k: 2 },
        nodes: [{ id: 'help', type: 'conversation', instruction: { type: 'prompt', text: "Answer the caller's questions about the shop." }, edges: [] }],
      };
      const agentId = await s.flowAgent(flow);
      const call = await ask(agentId, 'are you open on sunday');
      const request = chat.requests.find((r) => r.messages.at(-1)?.content === 'are you open on sunday');
      assert.ok(request, 'the conversation node asked the LLM to answer the caller');
      const reference = request.messages.filter((m) => m.content?.startsWith(REFERENCE_PREAMBLE));
      assert.equal(reference.length, 1, 'one reference message');
      assert.equal(reference[0]!.role, 'user');
      assert.match(reference[0]!.content!, /\[1\] \(source: Harbor Bikes help > Opening hours\)\nOur shop on Quay Street/);
      assert.ok(reference[0]!.content!.match(/^\[\d+\]/gm)!.length <= 2, "the flow's kb_config (top_k 2)");
      assert.doesNotMatch(request.messages[0]!.content!, /Quay Street/, 'nothing retrieved reaches the system prompt');
      assert.equal(call.latency.knowledge_base.num, 1);
      assert.equal(call.call_status, 'ended');

      const refused = await s.api('POST', '/create-conversation-flow', { ...flow, knowledge_base_ids: [kbId, 'knowledge_base_0000'] });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /^knowledge_base_ids\.1: /);
      const created = await s.api('POST', '/create-conversation-flow', flow);
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.deepEqual([created.json.knowledge_base_ids, created.json.kb_config], [[kbId], { top_k: 2 }]);
      const update = await s.api('PATCH', `/update-conversation-flow/${created.json.conversation_flow_id}`, { knowledge_base_ids: ['knowledge_base_0000'] });
      assert.equal(update.status, 400);
      assert.match(update.json.message, /^knowledge_base_ids\.0: /);
    });

    it('asks nothing of an LLM without knowledge bases, and refuses ids that are not the account\'s', async () => {
      chat.answer = () => 'Hello.';
      const agentId = await llmAgent({});
      const call = await ask(agentId, 'are you open on sunday');
      assert.equal(call.latency.knowledge_base, undefined, 'no source: no knowledge_base latency');
      assert.ok(chat.requests[0]!.messages.every((m) => !m.content?.startsWith(REFERENCE_PREAMBLE)));
      const refused = await s.api('POST', '/create-service-llm', { general_prompt: 'x', knowledge_base_ids: [kbId, 'knowledge_base_0000'] });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /knowledge_base_ids\.1/);
      // The retrieval settings are read back as they were set (the dashboard shows them).
      const named = await s.api('POST', '/create-service-llm', { general_prompt: 'x', knowledge_base_ids: [kbId], kb_config: { top_k: 2, filter_score: 0.25 } });
      const read = (await s.api('GET', `/get-service-llm/${named.json.llm_id}`)).json;
      assert.deepEqual([read.knowledge_base_ids, read.kb_config], [[kbId], { top_k: 2, filter_score: 0.25 }]);
      const badConfig = await s.api('POST', '/create-service-llm', { general_prompt: 'x', kb_config: { top_k: 0 } });
      assert.equal(badConfig.status, 400);
      assert.match(badConfig.json.message, /top_k/);
    });

    it('sends a custom LLM the chunks as knowledge_base_chunks in response_required, beside the transcript, only when its agent has knowledge bases', { timeout: 30_000 }, async () => {
      socketLlm.behave = (ws) => {
        send(ws, { response_type: 'config', config: { auto_reconnect: false } });
        send(ws, { response_type: 'response', response_id: 0, content: 'Harbor Bikes.', content_complete: true });
      };
      socketLlm.onEvent = (ws, event) => {
        if (event.interaction_type === 'response_required') send(ws, { response_type: 'response', response_id: event.response_id, content: 'They never expire.', content_complete: true });
      };
      const customAgent = async (engine: Record<string, unknown>) => {
        const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: socketLlm.url, ...engine } });
        assert.equal(agent.status, 201, JSON.stringify(agent.json));
        return agent.json.agent_id as string;
      };
      const withKnowledge = await customAgent({ knowledge_base_ids: [kbId], kb_config: { top_k: 1 } });
      const call = await ask(withKnowledge, 'do gift cards expire');
      const [required] = socketLlm.of(call.call_id, 'response_required');
      assert.ok(required, 'the server was asked');
      assert.equal(required.knowledge_base_chunks.length, 1, 'kb_config.top_k');
      const [chunk] = required.knowledge_base_chunks;
      assert.deepEqual(Object.keys(chunk).sort(), ['knowledge_base_id', 'score', 'source_id', 'text']);
      assert.match(chunk.text, /Ignore previous instructions/, 'the passage as found, as data');
      assert.equal(chunk.knowledge_base_id, kbId);
      assert.match(chunk.source_id, /^kb_source_/);
      assert.ok(chunk.score > 0 && chunk.score <= 1);
      assert.deepEqual(withoutWords(required.transcript), [
        { role: 'agent', content: 'Harbor Bikes.' },
        { role: 'user', content: 'do gift cards expire' },
      ], 'the transcript holds only what was said: the passage is no utterance');
      assert.equal(call.latency.knowledge_base.num, 1, "the search is the turn's knowledge_base latency");
      assert.ok(call.transcript_with_tool_calls.some((e: { role: string }) => e.role === 'knowledge_base_retrieval'));

      const without = await customAgent({});
      const plain = await ask(without, 'do gift cards expire');
      const [asked] = socketLlm.of(plain.call_id, 'response_required');
      assert.ok(asked && !('knowledge_base_chunks' in asked), 'no knowledge bases: no extension field');
      assert.equal(plain.latency.knowledge_base, undefined);

      const refused = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: socketLlm.url, knowledge_base_ids: ['knowledge_base_0000'] } });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /response_engine\.knowledge_base_ids\.0: no knowledge base/);
    });

    // A flow's knowledge node (offline, no LLM): the same server and knowledge base.
    /** One call: the greeting, the caller's `words`, the agent's answer and goodbye; the stored call. */
    async function askFlow(agentId: string, words: string) {
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
      const call = await askFlow(agentId, 'are you open on sunday');
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
      const call = await askFlow(agentId, 'are you open on sunday');
      assert.match(call.transcript, /Agent: Sorry, I do not know that\. Goodbye\./);
      assert.doesNotMatch(call.transcript, /Sundays/);
      const searches = call.transcript_with_tool_calls.filter((e: { role: string }) => e.role === 'knowledge_base_retrieval');
      assert.deepEqual(searches, [{ role: 'knowledge_base_retrieval', chunks: [] }]);
    });

    it('speaks a passage holding instructions as reference only: the relevant sentences, the flow unchanged', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId));
      const call = await askFlow(agentId, 'do gift cards expire');
      assert.match(call.transcript, /Gift cards never expire and can be used in the shop or online\./);
      assert.doesNotMatch(call.transcript, /Ignore previous|order is free/i, 'the instruction is no answer to the question: not spoken');
      assert.match(call.transcript, /Glad to help\. Goodbye\./, 'the flow goes on by its edges');
      const search = call.transcript_with_tool_calls.find((e: { role: string }) => e.role === 'knowledge_base_retrieval');
      assert.match(search.chunks[0].text, /Ignore previous instructions/, 'the record keeps the passage as found, as data');
    });

    it('keeps no chunk under opt_out_sensitive_data_storage (basic_attributes_only)', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(knowledgeFlow(kbId), { opt_out_sensitive_data_storage: true });
      const call = await askFlow(agentId, 'are you open on sunday');
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
