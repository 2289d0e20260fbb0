// Issue 24: a number's inbound_webhook_url (Retell's call_inbound). Before an inbound call is
// admitted, the account's server (a real local HTTP server) gets a signed `call_inbound` request;
// its answer overrides the agent, the dynamic variables and the metadata. A server that times out
// or answers garbage leaves the call on the number's agent. Over SIP with baresip (Debian) as the
// phone, and over Twilio (a local server speaking Twilio's wire protocol).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../src/media/sip/sip.transport.ts';
import { retellSignature, serviceSignature } from '../../src/webhooks/signer.ts';
import { STORES } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from './helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './sip/baresip.ts';
import { FakeTwilio } from './twilio/fake-twilio.ts';

const PUBLIC = 'https://switchboard.example.com';
const greeting = (text: string) => ({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text } }] });

for (const kind of STORES) {
  describe(`a number's inbound_webhook_url (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let phone: Baresip;
    let twilio: FakeTwilio;
    let backend: Receiver;
    let numberAgent: string;
    let vipAgent: string;
    before(async () => {
      twilio = await new FakeTwilio().start();
      backend = await Receiver.start();
      s = await startMediaServer(kind.name, {
        providers: fakeProviders([], { msPerChar: 10 }),
        env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '46000', SIP_RTP_PORT_MAX: '46998', PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl, WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' },
      });
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      phone = await Baresip.start();
      numberAgent = await s.flowAgent(greeting('Hello from the front desk.'));
      vipAgent = await s.flowAgent(greeting('Welcome back {{name}}.'));
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: numberAgent, inbound_webhook_url: backend.url('/inbound') })).status, 201);
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550200', inbound_agent_id: numberAgent, inbound_webhook_url: backend.url('/inbound'), twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken })).status, 201);
    });
    after(async () => {
      await phone?.close();
      await s?.close();
      await twilio?.close();
      await backend?.close();
    });

    const endedCall = (match: (c: any) => boolean) =>
      eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as any[];
        const call = list.find((c) => match(c) && c.call_status === 'ended');
        return call ? (await s.api('GET', `/v2/get-call/${call.call_id}`)).json : undefined;
      }, 15_000);

    it('SIP: the signed call_inbound request is answered with another agent, variables and metadata; the call runs on them', { timeout: 30_000 }, async () => {
      backend.respond = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call_inbound: { override_agent_id: vipAgent, dynamic_variables: { name: 'Ada' }, metadata: { tier: 'gold' } } }) });
      const seen = backend.received.length;
      phone.command('dial', `sip:+14155550100@127.0.0.1:${sip.port}`);
      await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      const request = backend.received[seen];
      assert.ok(request, 'the webhook was asked before the call was answered');
      assert.equal(request.headers['x-service-event'], 'call_inbound');
      assert.deepEqual(request.json, { event: 'call_inbound', call_inbound: { agent_id: numberAgent, agent_version: null, from_number: 'caller', to_number: '+14155550100' } });
      const { secret } = await s.runtime.services.webhooks.agentSecret(s.accountId);
      assert.equal(request.headers['x-service-signature'], serviceSignature(secret, request.raw), 'signed like agent webhooks');
      const at = Number(/^v=(\d+),/.exec(String(request.headers['x-retell-signature']))?.[1]);
      assert.equal(request.headers['x-retell-signature'], retellSignature(secret, request.raw.toString('utf8'), at), "and with Retell's signature");
      await new Promise((r) => setTimeout(r, 1_000));
      phone.command('hangup');
      const call = await endedCall((c) => c.to_number === '+14155550100');
      assert.equal(call.agent_id, vipAgent);
      assert.deepEqual(call.metadata, { tier: 'gold' });
      assert.ok(call.transcript_object.some((u: any) => u.role === 'agent' && u.content.startsWith('Welcome back Ada')), JSON.stringify(call.transcript_object));
    });

    it('Twilio: a webhook that times out or answers garbage leaves the call on the number\'s agent', { timeout: 30_000 }, async () => {
      backend.respond = () => ({ status: 200, body: 'not json', delayMs: 4_000 });
      const slow = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: '+14155550200' });
      assert.ok(slow.stream);
      const live = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.telephony_identifier === slow.callSid), 10_000);
      assert.equal(live.agent_id, numberAgent);
      slow.stream.stop();
      await endedCall((c) => c.telephony_identifier === slow.callSid);

      backend.respond = () => ({ status: 200, body: '{"call_inbound": {"override_agent_id": 42, "dynamic_variables": "x"}}' });
      const odd = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: '+14155550200' });
      assert.ok(odd.stream);
      const second = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.telephony_identifier === odd.callSid), 10_000);
      assert.equal(second.agent_id, numberAgent);
      odd.stream.stop();
      await endedCall((c) => c.telephony_identifier === odd.callSid);
    });
  });
}
