// Issue 24: a conversation flow's transfer_call and press_digit nodes over the API, on both
// stores: a bad destination or bad digits get a 400 naming the field and nothing is created; on a
// web call (which cannot be transferred nor send keys) the node records why in the call's
// transcript_with_tool_calls and takes its failure edge: the caller hears the fallback, nothing pretends.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LoopbackTransport } from '../../src/media/loopback/loopback.transport.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, fakeProviders, startMediaServer } from './helpers.ts';

const transferNode = (number: string, extra: Record<string, unknown> = {}) => ({
  id: 'desk', type: 'transfer_call', instruction: { type: 'static_text', text: 'Let me put you through.' },
  transfer_destination: { type: 'predefined', number }, transfer_option: { type: 'cold_transfer' }, ...extra,
});
const SORRY = { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'I cannot transfer this call. Goodbye.' } };
const FAILURE_EDGE = { id: 'failed', destination_node_id: 'sorry', transition_condition: { type: 'prompt', prompt: 'Transfer failed' } };

for (const kind of STORES) {
  describe(`flow transfer_call and press_digit nodes (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 4 }) });
    });
    after(async () => {
      await s?.close();
    });

    it('a bad destination, bad digits or a transfer node with edges: 400 naming the field; nothing is created', async () => {
      const before = (await s.api('GET', '/list-conversation-flows')).json.length;
      const cases: Array<[unknown, RegExp]> = [
        [{ start_node_id: 'desk', nodes: [transferNode('555-0100'), SORRY] }, /transfer_destination\/number/],
        [{ start_node_id: 'desk', nodes: [transferNode('http://pbx.example.com'), SORRY] }, /transfer_destination\/number/],
        [{ start_node_id: 'menu', nodes: [{ id: 'menu', type: 'press_digit', digits: '12x' }] }, /digits/],
        [{ start_node_id: 'menu', nodes: [{ id: 'menu', type: 'press_digit', digits: '1'.repeat(33) }] }, /digits/],
        [{ start_node_id: 'menu', nodes: [{ id: 'menu', type: 'press_digit' }] }, /press_digit node "menu" needs digits/],
        [{ start_node_id: 'desk', nodes: [transferNode('+14155550100', { edges: [FAILURE_EDGE] }), SORRY] }, /transfer_call node "desk" leaves the call/],
        [{ start_node_id: 'desk', nodes: [transferNode('+14155550100', { edge: { ...FAILURE_EDGE, destination_node_id: 'nowhere' } }), SORRY] }, /unknown node "nowhere"/],
        [{ start_node_id: 'sorry', nodes: [{ ...SORRY, digits: '1' }] }, /only press_digit nodes have digits/],
      ];
      for (const [flow, field] of cases) {
        const r = await s.api('POST', '/create-conversation-flow', flow);
        assert.equal(r.status, 400, JSON.stringify(flow));
        assert.match(String(r.json.message), field);
      }
      assert.equal((await s.api('GET', '/list-conversation-flows')).json.length, before);
    });

    it('on a web call the transfer node records why it cannot and takes its failure edge', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent({ start_node_id: 'desk', nodes: [transferNode('sip:desk@pbx.example.com', { edge: FAILURE_EDGE }), SORRY] });
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      const loopback = s.app.transports.get('loopback') as LoopbackTransport;
      const { endpoint } = await loopback.join(created.json.access_token);
      assert.deepEqual(await endpoint.ended, { reason: 'agent_hangup', status: 'ended' });
      const call = (await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
      assert.equal(call.transfer_destination ?? null, null);
      assert.equal(call.current_node_id, 'sorry');
      assert.deepEqual(
        (call.transcript_object as Array<{ content: string }>).map((u) => u.content),
        ['Let me put you through. I cannot transfer this call. Goodbye.'],
      );
      const tools = (call.transcript_with_tool_calls as Array<Record<string, unknown>>).filter((u) => String(u['role']).startsWith('tool_call'));
      assert.deepEqual(tools.map((u) => u['role']), ['tool_call_invocation', 'tool_call_result']);
      assert.equal(tools[0]?.['name'], 'transfer_call');
      assert.equal(tools[1]?.['content'], 'error: this call cannot be transferred (it is not a phone call)');
    });
  });
}
