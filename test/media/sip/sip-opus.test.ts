// Issue 24: Opus on SIP where the far end offers it, with baresip (Debian, its opus module) as the
// phone, on the embedded engines. A caller offering only Opus asks to buy something (a Flite WAV as
// its microphone): the flow takes the sales branch, the agent's words reach the phone, and the
// call's media is `opus` on the 48 kHz clock. Keys pressed on an Opus call reach the flow. An
// outbound call to a baresip that answers with Opus runs on Opus. (G.711-only phones keep G.711:
// sip-inbound and sip-outbound.) One store: the codec path does not touch it; the SIP tests on
// both stores cover the call records.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { NO_POCKETSPHINX, hasPocketsphinx } from '../../voice/capabilities.ts';
import { type MediaServer, eventually, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, ROUTING, fliteCallerWav, hasBaresip } from './baresip.ts';

const CALLING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'end', instruction: { type: 'static_text', text: 'Hello, this is the clinic calling about your appointment.' } }] };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-sip-opus-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));


const loudSamples = (phone: Baresip) => {
  const heard = phone.recordings().find((file) => file.endsWith('-dec.wav'));
  assert.ok(heard, 'baresip recorded what it heard');
  return new Int16Array(fs.readFileSync(heard).buffer.slice(44)).filter((v) => Math.abs(v) > 1000).length;
};

describe('Opus on SIP with baresip', { skip: (!hasBaresip() && NO_BARESIP) || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
  let s: MediaServer;
  let sip: SipTransport;
  before(async () => {
    s = await startMediaServer('sqlite', { env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '46000', SIP_RTP_PORT_MAX: '46998', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' } });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
  });
  after(() => s?.close());

  it('a caller offering only Opus is answered on Opus: its spoken "buy" takes the sales branch, and the agent is heard', { timeout: 40_000 }, async () => {
    const phone = await Baresip.start({ codecs: 'opus/48000/2', wav: await fliteCallerWav(dir, 'sales', 'i would like to buy something', { leadMs: 1_500, rate: 48_000, channels: 2 }) });
    try {
      const agentId = await s.flowAgent(ROUTING);
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550610', inbound_agent_id: agentId })).status, 201);
      phone.command('dial', `sip:+14155550610@127.0.0.1:${sip.port}`);
      await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      // The sales branch says its line and hangs up.
      await phone.waitFor((e) => e.type === 'CALL_CLOSED', 25_000);
      const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.to_number === '+14155550610' && c.call_status === 'ended'));
      const lines = (ended.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.ok(lines.some((l) => l.startsWith('agent: Sales it is.')), lines.join(' | '));
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      assert.equal(ended.media.codec, 'opus');
      assert.equal(ended.media.sample_rate, 48_000);
      assert.ok(ended.media.packets_in > 50, `packets_in ${ended.media.packets_in}`);
      assert.ok(ended.media.packets_out > 50, `packets_out ${ended.media.packets_out}`);
      const loud = loudSamples(phone);
      assert.ok(loud > 4000, `${loud} loud samples: the agent's words reached the phone`);
      assert.equal(sip.dialogCount, 0);
    } finally {
      await phone.close();
    }
  });

  it('keys pressed on an Opus call (RFC 4733 at the clock the phone offered) reach the flow, which extracts them', { timeout: 30_000 }, async () => {
    const phone = await Baresip.start({ codecs: 'opus/48000/2' });
    try {
      const agentId = await s.flowAgent({
        start_node_id: 'ask',
        nodes: [
          {
            id: 'ask',
            type: 'conversation',
            instruction: { type: 'static_text', text: 'Your code, then pound.' },
            extract_variables: [{ name: 'code', type: 'digits' }],
            edges: [{ id: 'got', destination_node_id: 'done', transition_condition: { type: 'equation', equations: [{ left: 'code', operator: 'exists' }], operator: '&&' } }],
          },
          { id: 'done', type: 'end', instruction: { type: 'static_text', text: 'Code {{code}}. Goodbye.' } },
        ],
      });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550613', inbound_agent_id: agentId })).status, 201);
      phone.command('dial', `sip:+14155550613@127.0.0.1:${sip.port}`);
      await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      await new Promise((r) => setTimeout(r, 500));
      for (const key of '852#') {
        phone.command('sndcode', key);
        await new Promise((r) => setTimeout(r, 250));
      }
      const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.to_number === '+14155550613' && c.call_status === 'ended'), 20_000);
      const lines = (ended.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.ok(lines.includes('user: 852'), lines.join(' | '));
      assert.equal(ended.media.codec, 'opus');
    } finally {
      await phone.close();
    }
  });

  it('an outbound call to a baresip that takes Opus runs on Opus (our offer lists it first)', { timeout: 30_000 }, async () => {
    const phone = await Baresip.start({ user: '+14155550611', answer: 'auto', codecs: 'opus/48000/2,PCMU' });
    try {
      const agentId = await s.flowAgent(CALLING);
      const imported = await s.api('POST', '/import-phone-number', { phone_number: '+14155550612', termination_uri: `127.0.0.1:${phone.sipPort}`, outbound_agent_id: agentId });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
      const created = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550612', to_number: '+14155550611' });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      await phone.waitFor((e) => e.type === 'CALL_CLOSED', 20_000);
      const ended = await eventually(async () => {
        const call = (await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
        return call.call_status === 'ended' ? call : undefined;
      });
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      assert.equal(ended.media.codec, 'opus');
      assert.equal(ended.media.sample_rate, 48_000);
      const loud = loudSamples(phone);
      assert.ok(loud > 4000, `${loud} loud samples: the agent's words reached the phone`);
    } finally {
      await phone.close();
    }
  });
});
