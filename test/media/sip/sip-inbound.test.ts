// Issue 24: calls over a SIP trunk on the server's own SIP endpoint, with baresip (Debian) as the
// caller's phone: an INVITE to a number an account holds is answered by its inbound agent, the
// agent's greeting reaches the phone over RTP (G.711), the call object is a phone call, and the
// phone's BYE ends it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './baresip.ts';

const GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, you have reached the front desk of the clinic.' } }] };

for (const kind of STORES) {
  describe(`inbound SIP calls from baresip (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let phone: Baresip;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 20 }), env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '42000', SIP_RTP_PORT_MAX: '42998' } });
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      phone = await Baresip.start();
    });
    after(async () => {
      await phone?.close();
      await s?.close();
    });

    const callOf = async (telephonyId: string) => {
      const list = await s.api('POST', '/v2/list-calls', {});
      return (list.json as any[]).find((c) => c.telephony_identifier === telephonyId);
    };

    it('answers a number it holds with the inbound agent; the greeting plays over RTP; the phone hangs up', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(GREETING);
      const imported = await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agentId });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
      // The Request-URI's user part without its +.
      phone.command('dial', `sip:14155550100@127.0.0.1:${sip.port}`);
      const established = await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      const telephonyId = await eventually(async () => (await s.api('POST', '/v2/list-calls', {})).json.find((c: any) => c.call_type === 'phone_call')?.telephony_identifier);
      const live = await callOf(telephonyId);
      assert.equal(live.call_status, 'ongoing');
      assert.equal(live.direction, 'inbound');
      assert.equal(live.to_number, '+14155550100');
      assert.equal(live.from_number, 'caller');
      assert.equal(live.agent_id, agentId);
      assert.ok(established);
      await new Promise((r) => setTimeout(r, 1_500));
      phone.command('hangup');
      const ended = await eventually(async () => {
        const call = await callOf(telephonyId);
        return call?.call_status === 'ended' ? call : undefined;
      });
      assert.equal(ended.disconnection_reason, 'user_hangup');
      assert.equal(ended.media.transport, 'sip');
      assert.equal(ended.media.codec, 'pcmu');
      assert.equal(ended.media.sample_rate, 8000);
      assert.ok(ended.media.packets_in > 20, `packets_in ${ended.media.packets_in}: the phone's audio arrived`);
      assert.ok(ended.media.packets_out > 20, `packets_out ${ended.media.packets_out}: the greeting was sent`);
      assert.equal(sip.dialogCount, 0);
      // What the phone heard (baresip's decoded audio): the greeting, not silence.
      const heard = phone.recordings().find((file) => file.endsWith('-dec.wav'));
      assert.ok(heard, 'baresip recorded what it heard');
      const pcm = new Int16Array(fs.readFileSync(heard).buffer.slice(44));
      const loud = pcm.filter((v) => Math.abs(v) > 1000).length;
      assert.ok(loud > 4000, `${loud} loud samples: the greeting reached the phone`);
    });

    it('takes the digits the phone sends (RFC 4733) as the caller\'s input: a flow extracts them and branches', { timeout: 40_000 }, async () => {
      const agentId = await s.flowAgent({
        start_node_id: 'ask',
        nodes: [
          {
            id: 'ask',
            type: 'conversation',
            instruction: { type: 'static_text', text: 'Enter your account number, then press pound.' },
            extract_variables: [{ name: 'account', type: 'digits' }],
            edges: [{ id: 'got', destination_node_id: 'found', transition_condition: { type: 'equation', equations: [{ left: 'account', operator: 'exists' }], operator: '&&' } }],
          },
          { id: 'found', type: 'end', instruction: { type: 'static_text', text: 'Account {{account}} found. Goodbye.' } },
        ],
      });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550177', inbound_agent_id: agentId })).status, 201);
      const established = phone.events.filter((e) => e.type === 'CALL_ESTABLISHED').length;
      phone.command('dial', `sip:+14155550177@127.0.0.1:${sip.port}`);
      await phone.waitFor(() => phone.events.filter((e) => e.type === 'CALL_ESTABLISHED').length > established, 10_000);
      await new Promise((r) => setTimeout(r, 500));
      for (const key of '4321#') {
        phone.command('sndcode', key);
        await new Promise((r) => setTimeout(r, 250));
      }
      const ended = await eventually(async () => {
        const list = (await s.api('POST', '/v2/list-calls', {})).json as any[];
        return list.find((c) => c.to_number === '+14155550177' && c.call_status === 'ended');
      }, 20_000);
      assert.equal(ended.disconnection_reason, 'agent_hangup', JSON.stringify(ended.transcript_object));
      const lines = (ended.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.ok(lines.includes('user: 4321'), lines.join(' | '));
      assert.ok(lines.some((l) => l.startsWith('agent: Account 4321 found.')), lines.join(' | '));
    });

    it('refuses a number it does not hold with 404, and nothing is created', { timeout: 20_000 }, async () => {
      const before = (await s.api('POST', '/v2/list-calls', {})).json.length;
      phone.command('dial', `sip:+19995550123@127.0.0.1:${sip.port}`);
      const closed = await phone.waitFor((e) => e.type === 'CALL_CLOSED' && String(e.param).includes('404'), 10_000);
      assert.ok(closed);
      assert.equal((await s.api('POST', '/v2/list-calls', {})).json.length, before);
      assert.equal(sip.dialogCount, 0);
    });
  });
}
