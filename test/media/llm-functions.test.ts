// Custom functions of a service LLM, end to end through real calls: the Node client joins a real
// server, the model (a local OpenAI-compatible chat server speaking the streaming protocol) calls
// a function, the service POSTs the signed request to a real local backend, gives the model the
// answer, and the agent speaks from it. The tool loop is capped; bad definitions get 400s.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { MAX_ROUNDS_PER_TURN } from '../../src/voice/engines/llm.engine.ts';
import { STORES } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { type MediaServer, concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

interface ChatBody {
  messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; parameters: unknown } }>;
}
type Reply = { text?: string; calls?: Array<{ id: string; name: string; arguments: string }> };

/** An OpenAI-compatible chat server (streamed SSE) whose answers a test scripts from the request. */
class ChatServer {
  readonly requests: ChatBody[] = [];
  answer: (body: ChatBody) => Reply = () => ({ text: 'Hello.' });
  readonly #server: Server;
  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatBody;
        this.requests.push(body);
        const reply = this.answer(body);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        // Text in two deltas, as models stream it.
        if (reply.text) {
          const half = Math.ceil(reply.text.length / 2);
          send({ choices: [{ delta: { content: reply.text.slice(0, half) } }] });
          send({ choices: [{ delta: { content: reply.text.slice(half) } }] });
        }
        (reply.calls ?? []).forEach((c, index) => {
          send({ choices: [{ delta: { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] } }] });
          send({ choices: [{ delta: { tool_calls: [{ index, function: { arguments: c.arguments } }] } }] });
        });
        send({ choices: [{ delta: {}, finish_reason: reply.calls?.length ? 'tool_calls' : 'stop' }] });
        res.end('data: [DONE]\n\n');
      });
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }
  close(): Promise<void> {
    return new Promise((r) => {
      this.#server.close(() => r());
      this.#server.closeAllConnections();
    });
  }
}

const lastToolResult = (body: ChatBody) => [...body.messages].reverse().find((m) => m.role === 'tool');

for (const kind of STORES) {
  describe(`custom functions of a service LLM (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let backend: Receiver;
    const chat = new ChatServer();
    const providers = fakeProviders([], { msPerChar: 2 });
    before(async () => {
      backend = await Receiver.start();
      const baseUrl = await chat.listen();
      providers.llm = new OpenAiChatLlm({ baseUrl, model: 'test-model', maxRetries: 0 });
      s = await startMediaServer(kind.name, { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, providers });
    });
    after(async () => {
      await s.close();
      await backend.close();
      await chat.close();
    });

    const lookup = (url: string, extra: Record<string, unknown> = {}) => ({
      type: 'custom', name: 'lookup_order', description: 'Finds an order by number.', url,
      parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      speak_during_execution: true, execution_message_description: 'Let me check.',
      ...extra,
    });

    async function llmAgent(llm: Record<string, unknown>): Promise<string> {
      const created = await s.api('POST', '/create-service-llm', { begin_message: 'Hi, how can I help?', ...llm });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'service_llm', llm_id: created.json.llm_id } });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      return agent.json.agent_id as string;
    }

    async function talk(agentId: string, words: string) {
      providers.stt.push(words);
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      const end = await client.ended;
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      return { end, client, call };
    }

    it('the model calls a function (a state tool), gets the backend answer, and the agent speaks from it', { timeout: 20_000 }, async () => {
      backend.respond = (r) => ({ status: 200, body: JSON.stringify({ order_id: r.json.args.order_id, status: 'shipped' }), delayMs: 100 });
      chat.requests.length = 0;
      chat.answer = (body) => {
        const result = lastToolResult(body);
        if (!result) return { calls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"42"}' }] };
        const status = (JSON.parse(result.content ?? '{}') as { status?: string }).status;
        return { text: `Your order is ${status}.`, calls: [{ id: 'call_2', name: 'end_call', arguments: '{}' }] };
      };
      const agentId = await llmAgent({
        general_prompt: 'You help with orders.',
        states: [{ name: 'orders', state_prompt: 'Look orders up.', tools: [lookup(backend.url('/orders'))] }],
      });
      const before = backend.received.length;
      const { end, client, call } = await talk(agentId, 'where is my order forty two');
      assert.equal(end.disconnection_reason, 'agent_hangup');
      // (Under heavy load the user's line can be placed before the greeting: the user's times come
      // from the audio received, the agent's from the clock. The order of the reply is the point.)
      assert.deepEqual(client.transcript.map((u) => `${u.role}: ${u.content}`).sort(), [
        'agent: Hi, how can I help?',
        'agent: Let me check. Your order is shipped.',
        'user: where is my order forty two',
      ]);
      assert.equal(client.transcript.at(-1)?.content, 'Let me check. Your order is shipped.');
      assert.equal(backend.received.length, before + 1);
      const request = backend.received.at(-1)!;
      assert.equal(request.json.name, 'lookup_order');
      assert.deepEqual(request.json.args, { order_id: '42' });
      // The model saw the function beside its own tools, and the answer as the tool's result.
      assert.deepEqual(chat.requests[0]!.tools!.map((t) => t.function.name), ['end_call', 'lookup_order']);
      assert.equal(lastToolResult(chat.requests[1]!)?.tool_call_id, 'call_1');
      assert.equal(lastToolResult(chat.requests[1]!)?.content, '{"order_id":"42","status":"shipped"}');
      const entries = (call.transcript_with_tool_calls as Array<Record<string, string>>).map((e) => e['role'] === 'tool_call_invocation' ? `invoke ${e['tool_call_id']} ${e['name']} ${e['arguments']}` : e['role'] === 'tool_call_result' ? `result ${e['tool_call_id']} ${e['content']}` : `${e['role']}: ${e['content']}`);
      assert.deepEqual(entries.slice(0, 2).sort(), ['agent: Hi, how can I help?', 'user: where is my order forty two']);
      assert.deepEqual(entries.slice(2), [
        'agent: Let me check.',
        'invoke call_1 lookup_order {"order_id":"42"}',
        'result call_1 {"order_id":"42","status":"shipped"}',
        'agent: Your order is shipped.',
      ]);
    });

    it('a failing function is an error the model reads, and the call goes on', { timeout: 20_000 }, async () => {
      backend.respond = () => ({ status: 503, body: 'down for maintenance' });
      chat.requests.length = 0;
      chat.answer = (body) => {
        const result = lastToolResult(body);
        if (!result) return { calls: [{ id: 'call_9', name: 'lookup_order', arguments: '{"order_id":"7"}' }] };
        return { text: result.content?.startsWith('error: HTTP 503') ? 'The system is down.' : 'Unexpected.', calls: [{ id: 'call_10', name: 'end_call', arguments: '{}' }] };
      };
      const agentId = await llmAgent({ general_tools: [lookup(backend.url('/orders'), { speak_during_execution: false })] });
      const { end, client } = await talk(agentId, 'order seven');
      assert.equal(end.disconnection_reason, 'agent_hangup');
      assert.equal(client.transcript.at(-1)?.content, 'The system is down.');
    });

    it(`a model that keeps calling functions is stopped after ${MAX_ROUNDS_PER_TURN - 1} rounds: the last round offers no tools`, { timeout: 20_000 }, async () => {
      backend.respond = () => ({ status: 200, body: '{"status":"pending"}' });
      chat.requests.length = 0;
      let n = 0;
      chat.answer = (body) => (body.tools ? { calls: [{ id: `loop_${++n}`, name: 'lookup_order', arguments: '{"order_id":"1"}' }] } : { text: 'Still pending, sorry.' });
      const agentId = await llmAgent({ general_tools: [lookup(backend.url('/orders'), { speak_during_execution: false })] });
      const before = backend.received.length;
      providers.stt.push('check my order');
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      await client.waitFor((e) => e.type === 'agent_stop_talking' && e['utterance_id'] === 'utt_2', 10_000);
      // Before hanging up: the post-call analysis asks the model too.
      const turnRequests = [...chat.requests];
      await client.hangup();
      assert.equal(backend.received.length - before, MAX_ROUNDS_PER_TURN - 1);
      assert.equal(turnRequests.length, MAX_ROUNDS_PER_TURN);
      assert.equal(turnRequests.at(-1)!.tools, undefined);
      assert.equal(client.transcript.at(-1)?.content, 'Still pending, sorry.');
    });

    it('bad definitions get 400 naming the problem', async () => {
      const url = backend.url('/orders');
      const cases: Array<[string, unknown, RegExp]> = [
        ['duplicate names', { general_tools: [lookup(url), lookup(url)] }, /general_tools\[1\]: duplicate function name "lookup_order"/],
        ['a state tool named like a general one', { general_tools: [lookup(url)], states: [{ name: 'a', tools: [lookup(url)] }] }, /states\[0\]\.tools\[0\]: duplicate function name "lookup_order"/],
        ['a reserved name', { general_tools: [lookup(url, { name: 'end_call' })] }, /the name "end_call" is reserved/],
        ['invalid JSON Schema', { general_tools: [lookup(url, { parameters: { type: 'object', required: 'order_id' } })] }, /general_tools\[0\]\.parameters is not a valid JSON Schema/],
        ['bad URL', { general_tools: [lookup('not a url')] }, /general_tools\[0\]\.url must be an absolute http or https URL/],
        ['refused URL', { states: [{ name: 'a', tools: [lookup('http://10.0.0.1/x')] }] }, /states\[0\]\.tools\[0\]\.url is not an allowed webhook destination/],
        ['two end_call tools', { general_tools: [{ type: 'end_call', name: 'bye' }, { type: 'end_call', name: 'bye2' }] }, /general_tools: at most one end_call tool/],
        ['a tool of a type the service has not', { general_tools: [{ type: 'transfer_call', name: 'transfer' }] }, /general_tools/],
        ['timeout over the cap', { general_tools: [lookup(url, { timeout_ms: 120_001 })] }, /timeout_ms/],
      ];
      for (const [label, body, message] of cases) {
        const created = await s.api('POST', '/create-service-llm', body);
        assert.equal(created.status, 400, label);
        assert.match(`${created.json.message} ${JSON.stringify(created.json.details ?? null)}`, message, label);
      }
      const llm = await s.api('POST', '/create-service-llm', { general_tools: [lookup(url), { type: 'end_call', name: 'end_call', description: 'Hang up.' }] });
      assert.equal(llm.status, 201, JSON.stringify(llm.json));
      const updated = await s.api('PATCH', `/update-service-llm/${llm.json.llm_id}`, { general_tools: [lookup(url), lookup(url)] });
      assert.equal(updated.status, 400);
      assert.match(updated.json.message, /duplicate function name/);
    });
  });
}
