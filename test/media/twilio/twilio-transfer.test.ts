// Issue 24: a service LLM's `transfer_call` tool (Retell's shape) on a Twilio call, against a
// local server speaking Twilio's real wire protocol (test/media/twilio/fake-twilio.ts): the live
// call's TwiML is replaced through the REST API by <Dial> to the destination, Twilio stops the
// stream, and the call ends `call_transfer` with `transfer_destination`. A refused update ends the
// call `agent_hangup`; a web call is not offered the tool.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeLlm } from '../../../src/providers/fake/fake.providers.ts';
import type { ChatRequest } from '../../../src/providers/llm.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { FakeTwilio } from './fake-twilio.ts';

const PUBLIC = 'https://switchboard.example.com';
const NUMBER = '+14155550100';
const CALLER = '+14155550123';
const DESK = '+14155550999';
const TRANSFER_TOOL = {
  type: 'transfer_call',
  name: 'transfer_to_desk',
  description: 'Transfer the caller to the front desk.',
  transfer_destination: { type: 'predefined', number: DESK },
  transfer_option: { type: 'cold_transfer' },
  speak_during_execution: true,
  execution_message_description: 'Transferring you now.',
};

const toolNames = (request: ChatRequest | undefined) => (request?.tools ?? []).map((t) => t.name);

for (const kind of STORES) {
  describe(`transfer_call on a Twilio call (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let twilio: FakeTwilio;
    let llm: FakeLlm;
    let agentId: string;
    before(async () => {
      twilio = await new FakeTwilio().start();
      llm = new FakeLlm();
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { llm, msPerChar: 10 }), env: { PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl } });
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      const created = await s.api('POST', '/create-retell-llm', { general_prompt: 'You route callers.', general_tools: [TRANSFER_TOOL] });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.deepEqual(created.json.general_tools, [TRANSFER_TOOL], 'the tool is stored as given');
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'retell-llm', llm_id: created.json.llm_id } });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      agentId = agent.json.agent_id;
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: NUMBER, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, inbound_agent_id: agentId })).status, 201);
    });
    after(async () => {
      await s.close();
      await twilio.close();
    });

    const endedCall = (telephonyId: string) =>
      eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
        const call = list.find((c) => c.telephony_identifier === telephonyId);
        return call && call.call_status !== 'ongoing' ? (await s.api('GET', `/v2/get-call/${call.call_id}`)).json : undefined;
      }, 15_000);

    it('the model calls the tool: the message is said, the call is redirected to <Dial> the desk, and it ends call_transfer', { timeout: 30_000 }, async () => {
      llm.push({ toolCalls: [{ name: 'transfer_to_desk' }] });
      const before = llm.requests.length;
      const { status, stream, callSid } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER });
      assert.equal(status, 200);
      assert.ok(stream);
      twilio.adopt(callSid, stream);
      const call = await endedCall(callSid);
      assert.ok(toolNames(llm.requests[before]).includes('transfer_to_desk'), `offered on a phone call: ${toolNames(llm.requests[before]).join(', ')}`);
      assert.equal(call.disconnection_reason, 'call_transfer');
      assert.equal(call.transfer_destination, DESK);
      assert.ok(stream.sent('media').length > 10, 'the transfer message was spoken before the transfer');
      const updates = twilio.calls.get(callSid)?.updates ?? [];
      assert.equal(updates.length, 1);
      assert.equal(updates[0]?.Twiml, `<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Number>${DESK}</Number></Dial></Response>`);
      assert.match(JSON.stringify(call.transcript_object), /Transferring you now\./);
    });

    it('Twilio refuses the update: the call ends agent_hangup with no transfer_destination', { timeout: 30_000 }, async () => {
      llm.push({ toolCalls: [{ name: 'transfer_to_desk' }] });
      // Not adopted: the fake's REST API answers 404 for this CallSid, as Twilio does for a call it does not know.
      const { stream, callSid } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER });
      assert.ok(stream);
      const call = await endedCall(callSid);
      assert.equal(call.disconnection_reason, 'agent_hangup');
      assert.equal(call.transfer_destination, null);
    });

    it('a web call is not offered the transfer tool', { timeout: 20_000 }, async () => {
      llm.push('Hello, how can I help?');
      const before = llm.requests.length;
      const client = await s.call(agentId);
      await eventually(() => llm.requests.length > before);
      assert.deepEqual(toolNames(llm.requests[before]).filter((n) => n.startsWith('transfer')), []);
      await client.hangup();
    });
  });
}
