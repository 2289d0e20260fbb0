// Custom-LLM agents under test: a case dials the agent's LLM WebSocket as a call would (a local
// server speaking Retell's protocol, test/media/llm-server.ts), in text and audio mode; the
// functions the server runs itself and reports are recorded among the case's calls.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { LlmServer, send } from '../media/llm-server.ts';
import { hasPocketsphinx } from '../voice/capabilities.ts';
import { runToEnd } from './helpers.ts';

for (const kind of STORES) {
  describe(`agent tests on a custom-LLM agent (${kind.name})`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    const llm = new LlmServer();
    before(async () => {
      await llm.listening;
      llm.behave = (ws) => {
        send(ws, { response_type: 'config', config: { auto_reconnect: false, call_details: true } });
        send(ws, { response_type: 'response', response_id: 0, content: 'Hello from your server.', content_complete: true });
      };
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'response_required') return;
        send(ws, { response_type: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup_order', arguments: '{"order_id":"42"}' });
        send(ws, { response_type: 'tool_call_result', tool_call_id: 't1', content: '{"status":"shipped"}' });
        send(ws, { response_type: 'response', response_id: event.response_id, content: 'Your order has shipped. Bye.', content_complete: true, end_call: true });
      };
      // The server's socket is on loopback: the destination policy lets it be dialled, as an operator would.
      h = await startHarness(kind.name, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
      key = (await h.account()).apiKey;
      const agent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'custom-llm', llm_websocket_url: llm.url }, reminder_max_count: 0 } });
      assert.equal(agent.status, 201, agent.raw);
      agentId = agent.json.agent_id;
    });
    after(async () => {
      await h?.close();
      await llm.close();
    });

    it("text mode: the case talks to the agent's LLM socket; the server's function calls are recorded and asserted", async () => {
      const created = await h.request({
        method: 'POST', url: '/create-test-case', key,
        body: {
          agent_id: agentId, name: 'order status', metadata: { suite: 'ci' }, dynamic_variables: { customer: 'Ada' },
          caller: { script: [{ say: 'where is my order' }] },
          assertions: [
            { type: 'transcript_contains', role: 'agent', text: 'Hello from your server' },
            { type: 'transcript_contains', role: 'agent', text: 'has shipped' },
            { type: 'tool_called', name: 'lookup_order', args: { order_id: '42' } },
            { type: 'disconnection_reason', value: 'agent_hangup' },
          ],
        },
      });
      assert.equal(created.status, 201, created.raw);
      const [result] = (await runToEnd(h, key, { agent_id: agentId, test_case_ids: [created.json.test_case_id] })).results;
      assert.equal(result.error, null);
      assert.equal(result.passed, true, JSON.stringify({ assertions: result.assertions, transcript: result.transcript }));
      assert.deepEqual(result.tool_calls, [{ name: 'lookup_order', arguments: { order_id: '42' }, result: '{"status":"shipped"}', mocked: false, ok: true }]);
      // The server heard the caller's words and was sent the call, its metadata and variables, as in a real call.
      const callId = llm.connections.at(-1)!.split('/').pop()!;
      const required = llm.of(callId, 'response_required');
      assert.equal(required.length, 1);
      const { role, content } = required[0]!.transcript.at(-1);
      assert.deepEqual({ role, content }, { role: 'user', content: 'where is my order' });
      const details = llm.of(callId, 'call_details')[0]!;
      assert.equal(details.call.agent_id, agentId);
      assert.deepEqual(details.call.metadata, { suite: 'ci' });
      assert.deepEqual(details.call.retell_llm_dynamic_variables, { customer: 'Ada' });
    });

    it("audio mode: the server's opening is spoken through the pipeline, in real time (its socket is not on the virtual clock), and the functions it reports are recorded", { skip: !hasPocketsphinx(), timeout: 60_000 }, async () => {
      const created = await h.request({
        method: 'POST', url: '/create-test-case', key,
        body: {
          agent_id: agentId, mode: 'audio', caller: { script: [{ say: 'where is my order' }] },
          assertions: [{ type: 'transcript_contains', role: 'agent', text: 'Hello from your server' }, { type: 'tool_called', name: 'lookup_order', args: { order_id: '42' } }],
        },
      });
      assert.equal(created.status, 201, created.raw);
      const [result] = (await runToEnd(h, key, { agent_id: agentId, test_case_ids: [created.json.test_case_id] })).results;
      assert.equal(result.error, null);
      assert.equal(result.passed, true, JSON.stringify({ assertions: result.assertions, transcript: result.transcript }));
      assert.equal(result.clock, 'real_time');
      assert.deepEqual(result.tool_calls, [{ name: 'lookup_order', arguments: { order_id: '42' }, result: '{"status":"shipped"}', mocked: false, ok: true }]);
    });
  });
}
