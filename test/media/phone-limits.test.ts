// Issue 24: inbound phone calls count against the account's concurrency limit, as web calls do.
// At the limit, a SIP INVITE gets 486 Busy Here with Retry-After (baresip, Debian, as the phone),
// and Twilio's voice webhook answers <Reject reason="busy"/> (a local server speaking Twilio's
// wire protocol). A number whose inbound agent was deleted gets 480 on SIP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../src/media/sip/sip.transport.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from './helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './sip/baresip.ts';
import { FakeTwilio } from './twilio/fake-twilio.ts';

const PUBLIC = 'https://switchboard.example.com';
const LONG_GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, you have reached the clinic. Please hold the line.' } }] };

for (const kind of STORES) {
  describe(`inbound phone calls under the account's concurrency limit (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let phone: Baresip;
    let twilio: FakeTwilio;
    let key: string;
    const api = (method: string, path: string, body?: unknown) => s.api(method, path, body, key);
    before(async () => {
      twilio = await new FakeTwilio().start();
      s = await startMediaServer(kind.name, {
        providers: fakeProviders([], { msPerChar: 10 }),
        env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '45000', SIP_RTP_PORT_MAX: '45998', PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl },
      });
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      // An account that may have one call at a time.
      key = (await s.runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 100_000, concurrencyLimit: 1 })).api_key;
      phone = await Baresip.start();
    });
    after(async () => {
      await phone?.close();
      await s?.close();
      await twilio?.close();
    });

    const agent = async () => {
      const flow = await api('POST', '/create-conversation-flow', LONG_GREETING);
      return (await api('POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } })).json.agent_id as string;
    };

    it('at the limit, a second SIP call gets 486 Busy Here and a Twilio call gets <Reject reason="busy"/>; nothing is created', { timeout: 30_000 }, async () => {
      const agentId = await agent();
      assert.equal((await api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agentId })).status, 201);
      assert.equal((await api('POST', '/import-phone-number', { phone_number: '+14155550200', inbound_agent_id: agentId, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken })).status, 201);
      phone.command('dial', `sip:+14155550100@127.0.0.1:${sip.port}`);
      await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      await eventually(async () => (await api('POST', '/v2/list-calls', {})).json.some((c: any) => c.call_status === 'ongoing'));

      phone.command('dial', `sip:+14155550100@127.0.0.1:${sip.port}`);
      const busy = await phone.waitFor((e) => e.type === 'CALL_CLOSED' && String(e.param).includes('486'), 10_000);
      assert.ok(busy);
      const rung = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: '+14155550200' });
      assert.equal(rung.status, 200);
      assert.equal(rung.twiml, '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="busy"/></Response>');
      assert.equal((await api('POST', '/v2/list-calls', {})).json.length, 1, 'only the first call exists');

      // Below the limit again: a Twilio call is answered with its stream.
      phone.command('hangup');
      await eventually(async () => (await api('POST', '/v2/list-calls', {})).json.every((c: any) => c.call_status === 'ended'));
      const again = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: '+14155550200' });
      assert.match(again.twiml, /<Connect><Stream/);
      again.stream?.stop();
    });

    it('a number whose inbound agent was deleted: the INVITE gets 480 and nothing is created', { timeout: 20_000 }, async () => {
      await eventually(async () => (await api('POST', '/v2/list-calls', {})).json.every((c: any) => c.call_status === 'ended'));
      const agentId = await agent();
      assert.equal((await api('POST', '/import-phone-number', { phone_number: '+14155550300', inbound_agent_id: agentId })).status, 201);
      const deleted = await api('DELETE', `/delete-agent/${agentId}`);
      assert.ok(deleted.status === 204 || deleted.status === 200, `delete-agent: ${deleted.status} ${JSON.stringify(deleted.json)}`);
      const before = (await api('POST', '/v2/list-calls', {})).json.length;
      const closed = phone.events.filter((e) => e.type === 'CALL_CLOSED').length;
      phone.command('dial', `sip:+14155550300@127.0.0.1:${sip.port}`);
      await phone.waitFor(() => phone.events.filter((e) => e.type === 'CALL_CLOSED').length > closed, 10_000);
      assert.match(String(phone.events.filter((e) => e.type === 'CALL_CLOSED').at(-1)?.param), /480/);
      assert.equal((await api('POST', '/v2/list-calls', {})).json.length, before);
    });
  });
}
