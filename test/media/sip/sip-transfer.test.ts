// Issue 24: a service LLM's `transfer_call` tool on a SIP call, with baresip (Debian) as both
// phones: the caller's baresip dials a number we hold, the agent transfers it by REFER (RFC 3515)
// to a second baresip, which rings and answers the call the first one places; we get 202, the
// NOTIFY sipfrag of the new call, and leave with a BYE. The call ends `call_transfer` with
// `transfer_destination`. A conversation flow's transfer_call node, and a custom LLM's
// `transfer_number`, do the same after their words.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { FakeLlm } from '../../../src/providers/fake/fake.providers.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, type BaresipEvent, NO_BARESIP, hasBaresip } from './baresip.ts';
import { LlmServer, send } from '../llm-server.ts';

for (const kind of STORES) {
  describe(`transfer by REFER to a second baresip (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let caller: Baresip;
    let desk: Baresip;
    let llm: FakeLlm;
    const customLlm = new LlmServer();
    before(async () => {
      llm = new FakeLlm();
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { llm, msPerChar: 10 }), env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '43000', SIP_RTP_PORT_MAX: '43998', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' } });
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      // One after the other: if the second cannot start, after() still ends the first.
      caller = await Baresip.start();
      desk = await Baresip.start({ user: 'desk', answer: 'auto' });
    });
    after(async () => {
      await Promise.all([caller?.close(), desk?.close()]);
      await s?.close();
      await customLlm.close();
    });

    it('the agent transfers the caller: REFER, the desk rings and answers, our BYE; the call ends call_transfer', { timeout: 40_000 }, async () => {
      const deskUri = `sip:desk@127.0.0.1:${desk.sipPort}`;
      const created = await s.api('POST', '/create-retell-llm', {
        general_prompt: 'You route callers.',
        general_tools: [{ type: 'transfer_call', name: 'transfer_to_desk', transfer_destination: { type: 'predefined', number: deskUri }, speak_during_execution: true, execution_message_description: 'One moment.' }],
      });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'retell-llm', llm_id: created.json.llm_id } });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agent.json.agent_id })).status, 201);
      llm.push({ toolCalls: [{ name: 'transfer_to_desk' }] });

      caller.command('dial', `sip:+14155550100@127.0.0.1:${sip.port}`);
      await caller.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      // The caller's phone takes the REFER and places the new call; the desk answers it (auto-answer).
      const transfer = await caller.waitFor((e) => e.type === 'TRANSFER', 15_000);
      assert.equal(transfer.param, `<${deskUri}>`);
      await caller.waitFor((e) => e.type === 'CALL_RINGING' && e.param === deskUri, 10_000);
      await desk.waitFor((e) => e.type === 'CALL_ESTABLISHED' && String(e.param).startsWith('sip:caller@'), 10_000);
      const call = await eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
        return list.find((c) => c.call_type === 'phone_call' && c.call_status !== 'ongoing');
      }, 15_000);
      assert.equal(call.disconnection_reason, 'call_transfer', JSON.stringify(call));
      assert.equal(call.transfer_destination, deskUri);
      await eventually(() => sip.dialogCount === 0);
    });

    it("a flow's transfer_call node: its words, then REFER to the desk; the call ends call_transfer", { timeout: 40_000 }, async () => {
      // The first test left the caller and the desk talking: they hang up; only events after this count.
      caller.command('hangup');
      const [callerFrom, deskFrom] = [caller.events.length, desk.events.length];
      const after = (b: Baresip, from: number, match: (e: BaresipEvent) => boolean) => (e: BaresipEvent) => b.events.indexOf(e) >= from && match(e);
      const deskUri = `sip:desk@127.0.0.1:${desk.sipPort}`;
      const agentId = await s.flowAgent({
        start_node_id: 'desk',
        nodes: [
          {
            id: 'desk', type: 'transfer_call', instruction: { type: 'static_text', text: 'Putting you through.' },
            transfer_destination: { type: 'predefined', number: deskUri }, transfer_option: { type: 'cold_transfer' },
            edge: { id: 'failed', destination_node_id: 'sorry', transition_condition: { type: 'prompt', prompt: 'Transfer failed' } },
          },
          { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'The desk is closed. Goodbye.' } },
        ],
      });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550101', inbound_agent_id: agentId })).status, 201);
      caller.command('dial', `sip:+14155550101@127.0.0.1:${sip.port}`);
      const transfer = await caller.waitFor(after(caller, callerFrom, (e) => e.type === 'TRANSFER'), 15_000);
      assert.equal(transfer.param, `<${deskUri}>`);
      await desk.waitFor(after(desk, deskFrom, (e) => e.type === 'CALL_ESTABLISHED'), 10_000);
      const call = await eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
        return list.find((c) => c.to_number === '+14155550101' && c.call_status !== 'ongoing');
      }, 15_000);
      assert.equal(call.disconnection_reason, 'call_transfer', JSON.stringify(call));
      assert.equal(call.transfer_destination, deskUri);
      const said = (call.transcript_object as Array<{ role: string; content: string }>).filter((u) => u.role === 'agent').map((u) => u.content);
      assert.deepEqual(said, ['Putting you through.'], 'the words before the transfer, never the failure path');
      const tools = (call.transcript_with_tool_calls as Array<Record<string, unknown>>).filter((u) => String(u['role']).startsWith('tool_call'));
      assert.deepEqual(tools.map((u) => [u['role'], u['name']]), [['tool_call_invocation', 'transfer_call']]);
      await eventually(() => sip.dialogCount === 0);
    });

    it("a custom LLM's transfer_number: its words, then REFER to the desk; the call ends call_transfer", { timeout: 40_000 }, async () => {
      caller.command('hangup');
      const [callerFrom, deskFrom] = [caller.events.length, desk.events.length];
      const after = (b: Baresip, from: number, match: (e: BaresipEvent) => boolean) => (e: BaresipEvent) => b.events.indexOf(e) >= from && match(e);
      const deskUri = `sip:desk@127.0.0.1:${desk.sipPort}`;
      customLlm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Transferring you now.', content_complete: true, transfer_number: deskUri });
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: customLlm.url } });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550102', inbound_agent_id: agent.json.agent_id })).status, 201);
      caller.command('dial', `sip:+14155550102@127.0.0.1:${sip.port}`);
      const transfer = await caller.waitFor(after(caller, callerFrom, (e) => e.type === 'TRANSFER'), 15_000);
      assert.equal(transfer.param, `<${deskUri}>`);
      await desk.waitFor(after(desk, deskFrom, (e) => e.type === 'CALL_ESTABLISHED'), 10_000);
      const call = await eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
        return list.find((c) => c.to_number === '+14155550102' && c.call_status !== 'ongoing');
      }, 15_000);
      assert.equal(call.disconnection_reason, 'call_transfer', JSON.stringify(call));
      assert.equal(call.transfer_destination, deskUri);
      assert.deepEqual((call.transcript_object as Array<{ content: string }>).map((u) => u.content), ['Transferring you now.']);
      await eventually(() => sip.dialogCount === 0);
    });
  });
}
