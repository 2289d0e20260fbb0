// Custom functions from conversation flows, end to end through real calls: the Node client joins a
// real server (real port, real store), the flow's function node POSTs a signed request to a real
// local backend, and the agent speaks from the answer. Failures (500, a hang, HTML, 5 MB) become
// a variable the edges branch on; bad definitions get 400s naming the problem.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import type { WebCallClient } from '../../src/client/web-call-client.ts';
import { STORES } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { type MediaServer, concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const ALLOW_LOCAL = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' };

/** What an agent says, in order, from the call object's transcript_with_tool_calls. */
function roles(entries: Array<Record<string, string>>): string[] {
  return entries.map((e) =>
    e['role'] === 'tool_call_invocation' ? `invoke ${e['name']} ${e['arguments']}`
      : e['role'] === 'tool_call_result' ? 'result'
        : e['role'] === 'node_transition' ? `node ${e['former_node_id']}->${e['new_node_id']}`
          : `${e['role']}: ${e['content']}`,
  );
}

/** The content of the call's (one) function result. */
function resultOf(call: { transcript_with_tool_calls: Array<Record<string, string>> }): string {
  return call.transcript_with_tool_calls.find((e) => e['role'] === 'tool_call_result')?.['content'] ?? '';
}

function orderFlow(url: string) {
  return {
    start_node_id: 'ask',
    tools: [
      {
        tool_id: 'orders', type: 'custom', name: 'lookup_order', description: 'Finds an order.', url,
        parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
        response_variables: { order_status: 'order.status' },
      },
    ],
    nodes: [
      {
        id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'What is your order number?' },
        extract_variables: [{ name: 'order_id', type: 'digits' }],
        edges: [{ id: 'got', destination_node_id: 'lookup', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'order_id', operator: 'exists' }] } }],
      },
      {
        id: 'lookup', type: 'function', tool_id: 'orders', args: { order_id: '{{order_id}}' }, speak_during_execution: true,
        instruction: { type: 'static_text', text: 'One moment.' },
        edges: [
          { id: 'ok', destination_node_id: 'tell', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }] } },
          { id: 'else', destination_node_id: 'sorry', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'tell', type: 'end', instruction: { type: 'static_text', text: 'Your order has {{order_status}}. Goodbye.' } },
      { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'Sorry, I could not look it up. Goodbye.' } },
    ],
  };
}

for (const kind of STORES) {
  describe(`custom functions in a conversation flow, embedded engines (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let backend: Receiver;
    const flite = new FliteTts();
    before(async () => {
      backend = await Receiver.start();
      s = await startMediaServer(kind.name, { env: ALLOW_LOCAL });
    });
    after(async () => {
      await s.close();
      await backend.close();
      await flite.close();
    });

    it('hears the order number, calls the backend signed, speaks its answer; the call records the tool calls', { timeout: 60_000 }, async (t) => {
      if (!hasPocketsphinx()) return t.skip(NO_POCKETSPHINX);
      backend.respond = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"order":{"status":"shipped"}}', delayMs: 300 });
      const agentId = await s.flowAgent(orderFlow(backend.url('/orders')));
      const parts: Int16Array[] = [];
      for await (const c of flite.synthesize('my order number is five five five one two three four', { voiceId: 'flite-kal16' })) parts.push(c);
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking' && e['utterance_id'] === 'utt_1', 10_000);
      await client.play(concat(...parts, silence(900)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      assert.deepEqual(client.transcript.map((u) => `${u.role}: ${u.content}`), [
        'agent: What is your order number?',
        'user: my order number is five five five one two three four',
        'agent: One moment. Your order has shipped. Goodbye.',
      ]);

      assert.equal(backend.received.length, 1);
      const request = backend.received[0]!;
      assert.equal(request.path, '/orders');
      assert.equal(request.headers['content-type'], 'application/json');
      assert.match(String(request.headers['user-agent']), /^Switchboard/);
      const secret = (await s.api('GET', '/api/v1/webhooks/agent-secret.php')).json.secret as string;
      assert.equal(request.headers['x-service-signature'], `sha256=${createHmac('sha256', secret).update(request.raw).digest('hex')}`);
      assert.ok(request.headers['webhook-id'] && request.headers['webhook-timestamp'] && request.headers['webhook-signature']);
      assert.equal(request.json.name, 'lookup_order');
      assert.deepEqual(request.json.args, { order_id: '5551234' });
      assert.equal(request.json.call.agent_id, agentId);
      assert.equal(request.json.call.call_status, 'ongoing');
      assert.equal('access_token' in request.json.call, false);

      const call = (await s.api('GET', `/v2/get-call/${request.json.call.call_id}`)).json;
      // (Under heavy load the user's line can come before the question: the user's times come from
      // the audio received, the agent's from the clock.)
      const entries = roles(call.transcript_with_tool_calls);
      assert.deepEqual(entries.slice(0, 2).sort(), ['agent: What is your order number?', 'user: my order number is five five five one two three four']);
      // The flow's moves sit where they happened: into the function node before its filler, out of it after the result.
      assert.deepEqual(entries.slice(2), [
        'node ask->lookup',
        'agent: One moment.',
        'invoke lookup_order {"order_id":"5551234"}',
        'result',
        'node lookup->tell',
        'agent: Your order has shipped. Goodbye.',
      ]);
      const invocation = call.transcript_with_tool_calls[4];
      const result = call.transcript_with_tool_calls[5];
      assert.equal(result.tool_call_id, invocation.tool_call_id);
      assert.equal(result.content, '{"order":{"status":"shipped"}}');
    });
  });

  describe(`custom functions: failures, policies and validation (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let backend: Receiver;
    const providers = fakeProviders(['hello'], { msPerChar: 2 });
    before(async () => {
      backend = await Receiver.start();
      s = await startMediaServer(kind.name, { env: ALLOW_LOCAL, providers });
    });
    after(async () => {
      await s.close();
      await backend.close();
    });

    /** A flow that calls the backend first thing and says how it went. */
    const firstThing = (extra: Record<string, unknown> = {}) => ({
      start_node_id: 'lookup',
      default_dynamic_variables: { account: 'card 4111 1111 1111 1111' },
      tools: [{ tool_id: 't', type: 'custom', name: 'check', url: backend.url('/check'), timeout_ms: 800, response_variables: { state: 'state' }, ...extra }],
      nodes: [
        {
          id: 'lookup', type: 'function', tool_id: 't', args: { account: '{{account}}' },
          edges: [
            { id: 'ok', destination_node_id: 'ok', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }] } },
            { id: 'else', destination_node_id: 'failed', transition_condition: { type: 'always' } },
          ],
        },
        { id: 'ok', type: 'end', instruction: { type: 'static_text', text: 'State {{state}}.' } },
        { id: 'failed', type: 'end', instruction: { type: 'static_text', text: 'Failed {{tool_call_error}}.' } },
      ],
    });

    async function run(respond: Receiver['respond'], agent: Record<string, unknown> = {}): Promise<{ said: string; call: any }> {
      backend.respond = respond;
      const agentId = await s.flowAgent(firstThing(), agent);
      const client: WebCallClient = await s.call(agentId);
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const callId = String(client.callId);
      const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      return { said: client.transcript.map((u) => u.content).join(' | '), call };
    }

    it('a JSON answer sets the response variables', { timeout: 20_000 }, async () => {
      const { said, call } = await run(() => ({ status: 200, body: '{"state":"open"}', delayMs: 150 }));
      assert.equal(said, 'State open.');
      assert.equal(resultOf(call), '{"state":"open"}');
    });

    it('a round trip that delays a reply counts in its latency (function_call, and in e2e)', { timeout: 20_000 }, async () => {
      backend.respond = () => ({ status: 200, body: '{"state":"open"}', delayMs: 400 });
      const flow = firstThing();
      const agentId = await s.flowAgent({
        ...flow,
        start_node_id: 'ask',
        nodes: [
          { id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'Go on.' }, edges: [{ id: 'go', destination_node_id: 'lookup', transition_condition: { type: 'always' } }] },
          ...flow.nodes,
        ],
      });
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.equal(call.latency.function_call.num, 1);
      assert.ok(call.latency.function_call.values[0] >= 400, JSON.stringify(call.latency.function_call));
      assert.ok(call.latency.e2e.values[0] >= 400 + call.latency.asr.values[0], JSON.stringify(call.latency));
    });

    it('the filler said while the request runs can be interrupted; the request goes on and the flow moves on with its result', { timeout: 20_000 }, async () => {
      backend.respond = () => ({ status: 200, body: '{"state":"open"}', delayMs: 700 });
      const flow = firstThing();
      const filler = 'Please hold on while I look that up for you. '.repeat(12).trim();
      const agentId = await s.flowAgent({ ...flow, nodes: [{ ...flow.nodes[0], speak_during_execution: true, instruction: { type: 'static_text', text: filler } }, ...flow.nodes.slice(1)] });
      const requestsBefore = backend.received.length;
      providers.stt.push('are you there');
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_start_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      assert.ok(client.events.some((e) => e.type === 'clear'), 'the filler was cut off');
      assert.ok(client.events.some((e) => e.type === 'agent_stop_talking' && e['cut_off'] === true));
      assert.equal(backend.received.length, requestsBefore + 1, 'the request was sent once');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      // What was heard of the filler (its sentences may fall on both sides of the user's words) is left out.
      const entries = roles(call.transcript_with_tool_calls);
      assert.match(entries[0]!, /^agent: Please hold/);
      // The filler's entries: as much of it as was heard, cut anywhere (even after two words).
      const rest = entries.filter((r) => !(r.startsWith('agent: ') && filler.startsWith(r.slice('agent: '.length))));
      // The flow moved on from the function node once its result was in, before its answer.
      assert.deepEqual(rest.filter((r) => r !== 'user: are you there'), ['invoke check {"account":"card 4111 1111 1111 1111"}', 'result', 'node lookup->ok', 'agent: State open.']);
      assert.ok(rest.indexOf('user: are you there') < rest.indexOf('result'), 'the result came in after the user spoke over the filler');
      assert.equal(call.transcript_object[0].cut_off, true);
      assert.equal(call.transcript_object.at(-1).content, 'State open.');
    });

    it('an answer of 500 is survived: the edges see tool_call_status error and the reason', { timeout: 20_000 }, async () => {
      const { said, call } = await run(() => ({ status: 500, body: 'boom' }));
      assert.equal(said, 'Failed http_500.');
      assert.match(resultOf(call), /^error: HTTP 500: boom/);
    });

    it('a backend that hangs is cut off at timeout_ms', { timeout: 20_000 }, async () => {
      const started = Date.now();
      const { said, call } = await run(() => 'hang');
      assert.equal(said, 'Failed timeout.');
      assert.ok(Date.now() - started >= 800);
      assert.match(resultOf(call), /no complete response within 800 ms/);
    });

    it('an HTML answer reaches the record as text; the variables it cannot give make it invalid_json', { timeout: 20_000 }, async () => {
      const { said, call } = await run(() => ({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html><body>Login</body></html>' }));
      assert.equal(said, 'Failed invalid_json.');
      assert.equal(resultOf(call), '<html><body>Login</body></html>');
    });

    it('a 5 MB answer is read no further than the bound, and cut to 15,000 characters saying so', { timeout: 20_000 }, async () => {
      const huge = `{"state":"${'x'.repeat(5 * 1024 * 1024)}"}`;
      const { said, call } = await run(() => ({ status: 200, body: huge }));
      assert.equal(said, 'Failed invalid_json.');
      const content = resultOf(call);
      assert.ok(content.length < 15_200, `content of ${content.length} characters`);
      assert.match(content, /\[response cut: only its first 15000 characters are given\]$/);
    });

    it('basic_attributes_only keeps no transcript_with_tool_calls; everything_except_pii redacts arguments and results', { timeout: 20_000 }, async () => {
      const basic = await run(() => ({ status: 200, body: '{"state":"open"}' }), { data_storage_setting: 'basic_attributes_only' });
      assert.equal(basic.call.transcript_with_tool_calls, null);
      const request = backend.received.at(-1)!;
      assert.equal(request.json.call.service_llm_dynamic_variables, null, 'the function gets the call as its policy keeps it');

      const pii = await run(() => ({ status: 200, body: '{"state":"open","card":"4111 1111 1111 1111"}' }), { data_storage_setting: 'everything_except_pii' });
      const entries = pii.call.transcript_with_tool_calls as Array<Record<string, string>>;
      const invocation = entries.find((e) => e['role'] === 'tool_call_invocation')!;
      const result = entries.find((e) => e['role'] === 'tool_call_result')!;
      assert.doesNotMatch(invocation['arguments']!, /4111/);
      assert.doesNotMatch(result['content']!, /4111/);
      assert.match(result['content']!, /\[number\]/);
    });

    it('bad definitions get 400 naming the problem', async () => {
      const base = firstThing();
      const cases: Array<[string, unknown, RegExp]> = [
        ['unknown tool_id', { ...base, nodes: [{ ...base.nodes[0], tool_id: 'nope' }, ...base.nodes.slice(1)] }, /unknown tool_id "nope"/],
        ['invalid JSON Schema', { ...base, tools: [{ ...base.tools[0], parameters: { type: 'object', properties: { a: { type: 'strin' } } } }] }, /tools\[0\]\.parameters is not a valid JSON Schema/],
        ['not an object schema', { ...base, tools: [{ ...base.tools[0], parameters: { type: 'string' } }] }, /tools\[0\]\.parameters must be a JSON Schema of type "object"/],
        ['duplicate names', { ...base, tools: [base.tools[0], { ...base.tools[0], tool_id: 'u' }] }, /tools\[1\]: duplicate function name "check"/],
        ['duplicate tool ids', { ...base, tools: [base.tools[0], { ...base.tools[0], name: 'other' }] }, /duplicate tool_id "t"/],
        ['bad URL', { ...base, tools: [{ ...base.tools[0], url: 'ftp://example.com/x' }] }, /tools\[0\]\.url must be an absolute http or https URL/],
        ['refused URL', { ...base, tools: [{ ...base.tools[0], url: 'http://169.254.169.254/latest' }] }, /tools\[0\]\.url is not an allowed webhook destination/],
        ['a header the service sets', { ...base, tools: [{ ...base.tools[0], headers: { 'X-Service-Signature': 'x' } }] }, /tools\[0\]\.headers: "X-Service-Signature" is set by the service/],
        ['a function node without tool_id', { ...base, nodes: [{ ...base.nodes[0], tool_id: undefined }, ...base.nodes.slice(1)] }, /function node "lookup" needs a tool_id/],
      ];
      for (const [label, body, message] of cases) {
        const created = await s.api('POST', '/create-conversation-flow', body);
        assert.equal(created.status, 400, label);
        assert.match(created.json.message, message, label);
      }
      // A schema with an `$id` can be saved again (the check keeps nothing between saves).
      const withId = { ...base, tools: [{ ...base.tools[0], parameters: { $id: 'https://example.com/args', type: 'object', properties: { a: { type: 'string' } } } }] };
      for (let i = 0; i < 2; i++) {
        const saved = await s.api('POST', '/create-conversation-flow', withId);
        assert.equal(saved.status, 201, JSON.stringify(saved.json));
      }
      // The same checks on update.
      const flow = await s.api('POST', '/create-conversation-flow', base);
      assert.equal(flow.status, 201, JSON.stringify(flow.json));
      const updated = await s.api('PATCH', `/update-conversation-flow/${flow.json.conversation_flow_id}`, { tools: [{ ...base.tools[0], url: 'http://169.254.169.254/' }] });
      assert.equal(updated.status, 400);
      assert.match(updated.json.message, /tools\[0\]\.url is not an allowed webhook destination/);
    });
  });
}
