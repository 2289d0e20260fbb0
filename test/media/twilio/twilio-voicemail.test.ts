// Voicemail detection on a real outbound call (issue 24): create-phone-call through the local
// server speaking Twilio's wire protocol (fake-twilio.ts); the callee's side of the media stream
// plays an answering machine (a Flite greeting, then a 1 kHz beep) or a person ("Hello?").
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../../src/providers/flite/flite.tts.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { FakeTwilio } from './fake-twilio.ts';

const PUBLIC = 'https://switchboard.example.com';
const NUMBER = '+14155550100';
const CALLEE = '+14155550777';
const OPENING = 'Hi, this is Ada from Acme.';
const FLOW = {
  start_node_id: 'greet',
  nodes: [{ id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: OPENING }, edges: [] }],
};

/** 16 kHz speech as 8 kHz (the pairs averaged: the phone band). */
function to8k(pcm: Int16Array): Int16Array {
  return Int16Array.from({ length: Math.floor(pcm.length / 2) }, (_, i) => Math.round((pcm[2 * i]! + pcm[2 * i + 1]!) / 2));
}
const silence8k = (ms: number) => new Int16Array(ms * 8);
const beep8k = (ms: number) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(9000 * Math.sin((2 * Math.PI * 1000 * i) / 8000)));

// One store: what is tested is the call's media, not its storage (the call object's fields are
// stored on both stores by the phone-call tests), and each case runs in real time.
for (const kind of STORES.slice(0, 1)) {
  describe(`voicemail detection on an outbound Twilio call (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let twilio: FakeTwilio;
    let providers: ReturnType<typeof fakeProviders>;
    let greeting: Int16Array;
    let hello: Int16Array;
    before(async () => {
      const flite = new FliteTts();
      const say = async (text: string) => {
        const parts: Int16Array[] = [];
        for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
        const all = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) all.set(p, (at += p.length) - p.length);
        return to8k(all);
      };
      greeting = (await say("Hi, you have reached Sam. I can't come to the phone right now, so please leave a message after the tone.")).subarray(0, 8 * 4_500);
      hello = await say('Hello?');
      await flite.close();
      twilio = await new FakeTwilio().start();
      providers = fakeProviders([], { msPerChar: 30 });
      s = await startMediaServer(kind.name, { providers, env: { PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl } });
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      const imported = await s.api('POST', '/import-phone-number', { phone_number: NUMBER, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
    });
    after(async () => {
      await s.close();
      await twilio.close();
    });

    const place = async (agentId: string, body: Record<string, unknown> = {}) => {
      const created = await s.api('POST', '/v2/create-phone-call', { from_number: NUMBER, to_number: CALLEE, override_agent_id: agentId, ...body });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const call = created.json as { call_id: string; telephony_identifier: string };
      return { call, stream: await twilio.answer(call.telephony_identifier) };
    };
    const ended = (callId: string) =>
      eventually(async () => {
        const row = (await s.api('GET', `/v2/get-call/${callId}`)).json;
        return row.call_status === 'ended' ? row : undefined;
      }, 15_000);

    it('a machine: the agent holds its opening through the greeting, leaves the message after the beep and ends voicemail_reached', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(FLOW, {
        enable_voicemail_detection: true,
        voicemail_detection_timeout_ms: 20_000,
        voicemail_option: { action: { type: 'static_text', text: 'Hi {{name}}, Ada from Acme here. Please call us back.' } },
      });
      const refused = await s.api('POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: 'conversation_flow_x' }, voicemail_option: { action: { type: 'static_text' } } });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /voicemail_option/);
      const agent = (await s.api('GET', `/get-agent/${agentId}`)).json;
      assert.deepEqual(agent.accepted_without_effect ?? [], [], 'the voicemail fields take effect');
      const { call, stream } = await place(agentId, { retell_llm_dynamic_variables: { name: 'Sam' } });
      await stream.say(greeting);
      await stream.say(silence8k(300));
      assert.equal(stream.sent('media').length, 0, 'nothing was said over the greeting');
      await stream.say(beep8k(500));
      const beepEnded = stream.sent('media').length;
      void stream.say(silence8k(6_000));
      assert.equal(await stream.closed, 1000, 'the agent hung up after its message');
      assert.ok(stream.sent('media').length - beepEnded > 50, 'the message was spoken after the beep');
      const row = await ended(call.call_id);
      assert.equal(row.disconnection_reason, 'voicemail_reached');
      assert.equal(row.call_analysis.in_voicemail, true);
      const agentLines = (row.transcript_object as Array<{ role: string; content: string }>).filter((u) => u.role === 'agent').map((u) => u.content);
      assert.deepEqual(agentLines, ['Hi Sam, Ada from Acme here. Please call us back.'], 'the message, never the opening');
    });

    it('with hangup as the action, the machine is hung up on at once', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(FLOW, { enable_voicemail_detection: true, voicemail_option: { action: { type: 'hangup' } } });
      const { call, stream } = await place(agentId);
      // The greeting is still being played when we hang up (its audio paced by the test's clock, not the machine's load).
      assert.equal(await stream.say(greeting), false, 'hung up during the greeting');
      assert.equal(await stream.closed, 1000);
      const row = await ended(call.call_id);
      assert.equal(row.disconnection_reason, 'voicemail_reached');
      assert.equal(stream.sent('media').length, 0);
    });

    it('a person: "Hello?" then a pause, and the opening plays once, the hello not answered twice', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(FLOW, { enable_voicemail_detection: true, voicemail_option: { action: { type: 'hangup' } } });
      providers.stt.push('hello');
      const { call, stream } = await place(agentId);
      await stream.say(silence8k(300));
      await stream.say(hello);
      assert.equal(stream.sent('media').length, 0, 'the agent waited for the callee');
      void stream.say(silence8k(4_000));
      await eventually(() => stream.sent('media').length > 20, 5_000);
      await new Promise((r) => setTimeout(r, 1_500));
      stream.stop();
      const row = await ended(call.call_id);
      assert.equal(row.disconnection_reason, 'user_hangup');
      assert.equal(row.call_analysis.in_voicemail, false);
      const lines = (row.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.deepEqual(lines, ['user: hello', `agent: ${OPENING}`], lines.join(' | '));
    });
  });
}
