// Knowledge bases in calls: a service LLM naming knowledge bases gets, before its answer to each
// caller turn, the best chunks as reference material (a user message after the system prompt,
// marked as information, not instructions), through real calls against a local OpenAI-compatible
// chat server; the call's latency carries the retrieval time (latency.knowledge_base).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { REFERENCE_PREAMBLE } from '../../src/voice/engines/context.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, silence, startMediaServer, tone } from '../media/helpers.ts';
import { ChatServer } from './chat-server.ts';
import { INJECTION_TEXT, POLICIES_MD, base64 } from './corpus.ts';

for (const kind of STORES) {
  describe(`knowledge bases in service-LLM calls (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const chat = new ChatServer();
    const providers = fakeProviders([], { msPerChar: 1 });
    let kbId: string;
    before(async () => {
      providers.llm = new OpenAiChatLlm({ baseUrl: await chat.listen(), model: 'test-model', maxRetries: 0 });
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
    after(async () => {
      await s.close();
      await chat.close();
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
  });
}
