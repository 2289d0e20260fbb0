// Issue 24: Retell's register-phone-call (custom telephony). The account registers a call and its
// own PBX dials it in at sip:{call_id}@SIP_PUBLIC_HOST: here baresip (Debian) is that PBX. The
// registered call becomes ongoing on its agent with the SIP Call-ID as its telephony identifier;
// a call id that is not waiting for its INVITE gets 404; bad input gets a 400 naming the field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './baresip.ts';

const GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello {{name}}, this is the clinic.' } }] };

for (const kind of STORES) {
  describe(`register-phone-call: a PBX dials the call in over SIP (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let pbx: Baresip;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 10 }), env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '44998' } });
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      pbx = await Baresip.start({ user: 'pbx' });
    });
    after(async () => {
      await pbx?.close();
      await s?.close();
    });

    it('registers a call; the INVITE to sip:{call_id}@host is answered on its agent; a second INVITE to it gets 404', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(GREETING);
      const registered = await s.api('POST', '/v2/register-phone-call', { agent_id: agentId, from_number: '+14155550123', to_number: '+14155550100', metadata: { ticket: 7 }, retell_llm_dynamic_variables: { name: 'Ada' } });
      assert.equal(registered.status, 201, JSON.stringify(registered.json));
      const callId = registered.json.call_id as string;
      assert.deepEqual(
        { status: registered.json.call_status, type: registered.json.call_type, direction: registered.json.direction, from: registered.json.from_number, to: registered.json.to_number },
        { status: 'registered', type: 'phone_call', direction: 'inbound', from: '+14155550123', to: '+14155550100' },
      );

      pbx.command('dial', `sip:${callId}@127.0.0.1:${sip.port}`);
      await pbx.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      const live = await eventually(async () => {
        const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
        return call.call_status === 'ongoing' ? call : undefined;
      });
      assert.ok(live.telephony_identifier.length > 0, 'the SIP Call-ID is the telephony identifier');
      assert.deepEqual(live.metadata, { ticket: 7 });

      // The same call id again (a replay, or a second leg): it no longer waits for an INVITE.
      const closedBefore = pbx.events.filter((e) => e.type === 'CALL_CLOSED').length;
      pbx.command('dial', `sip:${callId}@127.0.0.1:${sip.port}`);
      const refused = await pbx.waitFor((e) => e.type === 'CALL_CLOSED' && String(e.param).includes('404'), 10_000);
      assert.ok(refused);
      assert.equal(pbx.events.filter((e) => e.type === 'CALL_CLOSED').length, closedBefore + 1, 'only the second leg closed');

      // The greeting (a third of a second of audio) plays out before the PBX hangs up.
      await new Promise((r) => setTimeout(r, 1_500));
      pbx.command('hangup');
      const ended = await eventually(async () => {
        const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
        return call.call_status === 'ended' ? call : undefined;
      });
      assert.equal(ended.disconnection_reason, 'user_hangup');
      assert.equal(ended.media.transport, 'sip');
      // The registered call's dynamic variables reached its agent.
      assert.ok((ended.transcript_object as Array<{ role: string; content: string }>).some((u) => u.role === 'agent' && u.content.startsWith('Hello Ada')), JSON.stringify(ended.transcript_object));
    });

    it('a call id nobody registered gets 404; bad input gets a 400 naming the field and creates nothing', { timeout: 20_000 }, async () => {
      const before = (await s.api('POST', '/v2/list-calls', {})).json.length;
      pbx.command('dial', `sip:call_00000000000000000000000000000000@127.0.0.1:${sip.port}`);
      await pbx.waitFor((e) => e.type === 'CALL_CLOSED' && String(e.param).includes('404') && pbx.events.filter((x) => x.type === 'CALL_CLOSED').length >= 2, 10_000);
      const agentId = await s.flowAgent(GREETING);
      const bad = await s.api('POST', '/v2/register-phone-call', { agent_id: agentId, from_number: '555-0123' });
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.json), /from_number/);
      const missing = await s.api('POST', '/v2/register-phone-call', {});
      assert.equal(missing.status, 400);
      assert.match(JSON.stringify(missing.json), /agent_id/);
      assert.equal((await s.api('POST', '/v2/list-calls', {})).json.length, before);
    });
  });
}
