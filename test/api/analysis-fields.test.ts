// post_call_analysis_data (issue 13, item 8): an agent's custom analysis fields are validated at
// create/update-agent and filled into call_analysis.custom_analysis_data by the LLM at the end of
// a call, checked against their declared types (null where the LLM cannot fill one), here
// through a local OpenAI-compatible chat server; without an LLM every field is null.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { concat, fakeProviders, silence, startMediaServer, tone } from '../media/helpers.ts';

const FIELDS = [
  { type: 'string', name: 'caller_name', description: "The caller's first name.", examples: ['Ada'] },
  { type: 'enum', name: 'reason', description: 'Why the caller called.', choices: ['Booking', 'Cancellation'] },
  { type: 'boolean', name: 'wants_callback', description: 'The caller asked to be called back.' },
  { type: 'number', name: 'party_size', description: 'How many people the booking is for.' },
  { type: 'string', name: 'complaint', description: 'What the caller complained about, if anything.' },
];

for (const kind of STORES) {
  describe(`post_call_analysis_data on agents on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let engine: Record<string, string>;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      const flow = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: sampleFlow() });
      engine = { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id };
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => h.request({ method, url, key, body });

    it('stores the fields, defaults to none, and an update replaces them', async () => {
      const none = await req('POST', '/create-agent', { response_engine: engine });
      assert.deepEqual(none.json.post_call_analysis_data, []);
      const created = await req('POST', '/create-agent', { response_engine: engine, post_call_analysis_data: FIELDS });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(created.json.post_call_analysis_data, FIELDS);
      assert.deepEqual((await req('GET', `/get-agent/${created.json.agent_id}`)).json.post_call_analysis_data, FIELDS);
      const updated = await req('PATCH', `/update-agent/${created.json.agent_id}`, { post_call_analysis_data: FIELDS.slice(0, 1) });
      assert.deepEqual(updated.json.post_call_analysis_data, FIELDS.slice(0, 1));
    });

    it('refuses fields that break the rules, naming them', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [[FIELDS[0], { ...FIELDS[0] }], /post_call_analysis_data has two fields named "caller_name"/],
        [[{ type: 'enum', name: 'x', description: 'd', choices: [] }], /choices/],
        [[{ type: 'enum', name: 'x', description: 'd', choices: ['a', 'a'] }], /the choices of "x" repeat a value/],
        [[{ type: 'enum', name: 'x', description: 'd' }], /post_call_analysis_data: "x" is an enum and needs choices/],
        [[{ type: 'boolean', name: 'x', description: 'd', choices: ['a'] }], /"x" is a boolean; only enum fields take choices/],
        [[{ type: 'date', name: 'x', description: 'd' }], /type/],
        [[{ type: 'string', name: 'x' }], /description/],
        [[{ type: 'string', name: 'x', description: 'd', required: true }], /required/],
      ];
      for (const [fields, message] of cases) {
        const res = await req('POST', '/create-agent', { response_engine: engine, post_call_analysis_data: fields });
        assert.equal(res.status, 400, JSON.stringify(fields));
        assert.match(res.json.message, message);
      }
      const { json: agent } = await req('POST', '/create-agent', { response_engine: engine });
      const call = await req('POST', '/v2/create-web-call', { agent_id: agent.agent_id, agent_override: { agent: { post_call_analysis_data: [FIELDS[0], FIELDS[0]] } } });
      assert.equal(call.status, 400);
      assert.match(call.json.message, /^agent_override\.agent\.post_call_analysis_data has two fields named/);
    });
  });
}

/** A local OpenAI-compatible chat server that answers every request with `content`, streamed. */
async function chatServer(content: string) {
  const bodies: Array<Record<string, unknown>> = [];
  const server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const half = Math.floor(content.length / 2);
      for (const piece of [content.slice(0, half), content.slice(half)]) res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const BOOKING_FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. How can I help?' },
      edges: [{ id: 'book', destination_node_id: 'done', transition_condition: { type: 'keyword', keywords: ['appointment'] } }],
    },
    { id: 'done', type: 'end', success: true, instruction: { type: 'static_text', text: 'Booked. Goodbye.' } },
  ],
};

describe('custom_analysis_data from an OpenAI-compatible LLM at the end of a call', () => {
  it('fills each field as declared: values of the wrong type are null, unknown keys dropped', async () => {
    const answer = JSON.stringify({
      call_summary: 'Ada booked a table for four.',
      call_successful: true,
      user_sentiment: 'Positive',
      custom_analysis_data: { caller_name: '  Ada ', reason: 'booking', wants_callback: 'maybe', party_size: '4', unasked: 'x' },
    });
    const llmServer = await chatServer(answer);
    const llm = new OpenAiChatLlm({ baseUrl: llmServer.baseUrl, model: 'analysis-model', timeoutMs: 5_000 });
    const s = await startMediaServer('sqlite', { providers: { ...fakeProviders(['my name is ada i want an appointment for four']), llm } });
    try {
      const client = await s.call(await s.flowAgent(BOOKING_FLOW, { post_call_analysis_data: FIELDS }));
      await client.waitFor('agent_stop_talking', 5_000);
      void client.play(concat(tone(600), silence(800)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual(call.call_analysis, {
        call_summary: 'Ada booked a table for four.',
        call_successful: true,
        user_sentiment: 'Positive',
        custom_analysis_data: { caller_name: 'Ada', reason: 'Booking', wants_callback: null, party_size: 4, complaint: null },
      });
      // The one request was the analysis: JSON asked for, every field described to the model.
      assert.equal(llmServer.bodies.length, 1);
      const request = llmServer.bodies[0]!;
      assert.deepEqual(request['response_format'], { type: 'json_object' });
      const system = String((request['messages'] as Array<{ content: string }>)[0]?.content);
      assert.match(system, /"custom_analysis_data": an object with these keys/);
      assert.match(system, /- "caller_name" \(string or null\): The caller's first name\. Examples: "Ada"\./);
      assert.match(system, /- "reason" \(one of "Booking", "Cancellation" or null\): Why the caller called\./);
      assert.match(system, /- "party_size" \(number or null\)/);
    } finally {
      await s.close();
      await llmServer.close();
    }
  });

  it('everything_except_pii redacts what the fields hold, as it does the summary', async () => {
    const llmServer = await chatServer(JSON.stringify({ call_summary: 'A callback request.', custom_analysis_data: { callback: 'call me on 555-123-4567', reason: 'Booking' } }));
    const llm = new OpenAiChatLlm({ baseUrl: llmServer.baseUrl, model: 'm', timeoutMs: 5_000 });
    const s = await startMediaServer('sqlite', { providers: { ...fakeProviders(['i want an appointment']), llm } });
    try {
      const fields = [{ type: 'string', name: 'callback', description: 'Where to call back.' }, FIELDS[1]];
      const client = await s.call(await s.flowAgent(BOOKING_FLOW, { post_call_analysis_data: fields, data_storage_setting: 'everything_except_pii' }));
      await client.waitFor('agent_stop_talking', 5_000);
      void client.play(concat(tone(600), silence(800)));
      await client.ended;
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual(call.call_analysis.custom_analysis_data, { callback: 'call me on [number]', reason: 'Booking' });
    } finally {
      await s.close();
      await llmServer.close();
    }
  });

  it('without an LLM, the declared fields are there and null', async () => {
    const s = await startMediaServer('sqlite', { providers: fakeProviders(['i want an appointment']) });
    try {
      const client = await s.call(await s.flowAgent(BOOKING_FLOW, { post_call_analysis_data: FIELDS.slice(0, 2) }));
      await client.waitFor('agent_stop_talking', 5_000);
      void client.play(concat(tone(600), silence(800)));
      await client.ended;
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual(call.call_analysis.custom_analysis_data, { caller_name: null, reason: null });
      assert.equal(call.call_analysis.call_successful, true, 'the end node is marked a success');
    } finally {
      await s.close();
    }
  });
});
