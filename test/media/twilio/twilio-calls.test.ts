// Calls through Twilio media streams against a local server speaking Twilio's real wire protocol
// (test/media/twilio/fake-twilio.ts): the voice webhook with a real X-Twilio-Signature, the
// media-stream WebSocket (μ-law 8 kHz, marks, clear, dtmf both ways, stop), and the REST Calls API.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeLlm } from '../../../src/providers/fake/fake.providers.ts';
import type { LlmProvider } from '../../../src/providers/llm.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { decodeKeypad } from '../keypad-decoder.ts';
import { FakeStream, FakeTwilio } from './fake-twilio.ts';

const PUBLIC = 'https://switchboard.example.com';
const NUMBER = '+14155550100';
const CALLER = '+14155550123';
const CALLEE = '+14155550777';
const LONG = 'Let me tell you about every one of our plans, one by one, in great detail. '.repeat(2).trim();
const FLOW = {
  start_node_id: 'talk',
  nodes: [
    { id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: LONG }, edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['goodbye'] } }] },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
  ],
};

/** 8 kHz PCM: a 300 Hz tone (speech to the energy VAD) or silence. */
const tone8k = (ms: number) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
const silence8k = (ms: number) => new Int16Array(ms * 8);

for (const kind of STORES) {
  describe(`Twilio media streams (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let twilio: FakeTwilio;
    let agentId: string;
    let providers: ReturnType<typeof fakeProviders>;
    const llm = new FakeLlm();
    /** While set, the LLM answers only once it resolves: a hosted LLM slow to write the post-call analysis. */
    let llmHeld: Promise<void> | undefined;
    let llmWaiting = 0;
    const slowLlm: LlmProvider = {
      id: llm.id,
      async *chat(request) {
        if (llmHeld) {
          llmWaiting += 1;
          await llmHeld;
        }
        yield* llm.chat(request);
      },
    };
    before(async () => {
      twilio = await new FakeTwilio().start();
      providers = fakeProviders([], { llm: slowLlm, msPerChar: 30 });
      s = await startMediaServer(kind.name, { providers, env: { PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl } });
      // The public address reaches the server through a proxy: here, this rewrite.
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      agentId = await s.flowAgent(FLOW);
      const imported = await s.api('POST', '/import-phone-number', { phone_number: NUMBER, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, inbound_agent_id: agentId });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
    });
    after(async () => {
      await s.close();
      await twilio.close();
    });

    const callCount = async () => (await s.api('POST', '/v2/list-calls', {})).json.length as number;

    it('an inbound call: the signed webhook gets <Connect><Stream>; the agent speaks μ-law with marks; barge-in sends clear; the call is a phone call carried by Twilio', { timeout: 30_000 }, async () => {
      providers.stt.push('goodbye');
      const { status, twiml, stream, callSid } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER });
      assert.equal(status, 200);
      assert.match(twiml, /^<\?xml version="1.0" encoding="UTF-8"\?><Response><Connect><Stream url="wss:\/\/switchboard\.example\.com\/twilio\/stream">/);
      assert.ok(stream);
      // The agent's long greeting plays; Twilio echoes the marks as it plays it.
      await eventually(() => stream.echoedMarks.length >= 10, 10_000);
      assert.ok(stream.sent('media').length >= 10);
      // Barge-in: the caller talks over the reply; we send clear, and the flow ends the call on "goodbye".
      const said = stream.say(tone8k(600)).then(() => stream.say(silence8k(900)));
      await eventually(() => stream.sent('clear').length >= 1, 10_000);
      await said;
      assert.equal(await stream.closed, 1000, 'the agent hung up: we closed the stream');
      const calls = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
      const call = calls.find((c) => c.call_type === 'phone_call');
      assert.ok(call, 'a phone call was stored');
      // The line closed once the media stopped; the results are stored a moment later.
      const full = await eventually(async () => {
        const row = (await s.api('GET', `/v2/get-call/${call.call_id}`)).json;
        return row.call_status === 'ended' ? row : undefined;
      });
      assert.equal(full.disconnection_reason, 'agent_hangup');
      assert.equal(full.agent_id, agentId);
      assert.deepEqual(
        { from_number: full.from_number, to_number: full.to_number, direction: full.direction, telephony_identifier: full.telephony_identifier },
        { from_number: CALLER, to_number: NUMBER, direction: 'inbound', telephony_identifier: callSid },
      );
      assert.deepEqual({ transport: full.media.transport, codec: full.media.codec, sample_rate: full.media.sample_rate }, { transport: 'twilio', codec: 'pcmu', sample_rate: 8000 });
      // Issue 24, item 6: the call ran at 8 kHz end to end: the recogniser was opened at 8 kHz
      // (it was given the caller's audio as it came), and the recording is an 8 kHz WAV.
      assert.equal(providers.stt.opened.at(-1)?.sampleRateHz, 8000);
      const wav = Buffer.from(await (await fetch(twilio.route(full.recording_url))).arrayBuffer());
      assert.equal(wav.readUInt32LE(24), 8000, 'the WAV header says 8000 Hz');
      assert.equal(full.media.bytes_in, full.media.packets_in * 160, 'the caller sent 20 ms μ-law chunks');
      assert.ok(full.media.packets_out >= stream.sent('media').length);
      // What the caller heard of the cut-off reply is what Twilio's marks said was played.
      const cut = full.transcript_object.find((u: { role: string; content: string }) => u.role === 'agent');
      assert.ok(cut && cut.content.length < LONG.length, `the reply was cut off: ${cut?.content}`);
    });

    /**
     * A flow whose node `ask` says `prompt` and extracts `variable`, then ends saying `done`; a
     * Twilio call to `number` on it presses `keys`, 100 ms apart. The ended call and its lines.
     */
    const keyedCall = async (number: string, prompt: string, variable: Record<string, unknown>, done: string, keys: string) => {
      const agent = await s.flowAgent({
        start_node_id: 'ask',
        nodes: [
          {
            id: 'ask',
            type: 'conversation',
            instruction: { type: 'static_text', text: prompt },
            extract_variables: [variable],
            edges: [{ id: 'got', destination_node_id: 'found', transition_condition: { type: 'equation', equations: [{ left: String(variable['name']), operator: 'exists' }], operator: '&&' } }],
          },
          { id: 'found', type: 'end', instruction: { type: 'static_text', text: done } },
        ],
      });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: number, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, inbound_agent_id: agent })).status, 201);
      const { stream, callSid } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: number });
      assert.ok(stream);
      await eventually(() => stream.sent('media').length > 0, 10_000);
      for (const key of keys) {
        stream.dtmf(key);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(await stream.closed, 1000, 'the flow ended the call');
      const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.telephony_identifier === callSid && c.call_status === 'ended'));
      return { ended, lines: (ended.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`) };
    };

    it("keypad digits from Twilio's dtmf messages are the caller's input: a flow extracts them and branches", { timeout: 20_000 }, async () => {
      const { ended, lines } = await keyedCall('+14155550300', 'Enter your account number, then press pound.', { name: 'account', type: 'digits' }, 'Account {{account}} found. Goodbye.', '4321#');
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      assert.ok(lines.includes('user: 4321'), lines.join(' | '));
      assert.ok(lines.some((l) => l.startsWith('agent: Account 4321 found.')), lines.join(' | '));
    });

    it('a node expecting one digit (max_digits 1) takes a key at once, without pound or the timeout: the next key is the next turn', { timeout: 20_000 }, async () => {
      // Unbounded, "78" would be one turn (at the timeout) of two digits, not a choice.
      const choice = { name: 'choice', type: 'digits', min_digits: 1, max_digits: 1 };
      const { ended, lines } = await keyedCall('+14155550301', 'Press a number from one to nine.', choice, 'You chose {{choice}}. Goodbye.', '78');
      assert.ok(lines.includes('user: 7') && !lines.includes('user: 78'), lines.join(' | '));
      // The second key may cut the answer short (a key press interrupts as speech does).
      assert.ok(lines.some((l) => l.startsWith('agent: You')), lines.join(' | '));
      assert.equal(ended.current_node_id, 'found', 'the one digit was extracted: the equation edge took it');
    });

    it('the caller hangs up: stop ends the call user_hangup', { timeout: 20_000 }, async () => {
      const { stream } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER });
      assert.ok(stream);
      await eventually(() => stream.sent('media').length > 0, 10_000);
      const before = new Set(((await s.api('POST', '/v2/list-calls', {})).json as Array<{ call_id: string }>).map((c) => c.call_id));
      stream.stop();
      const ended = await eventually(async () => {
        const calls = (await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>;
        return calls.find((c) => before.has(c.call_id) && c.disconnection_reason === 'user_hangup');
      });
      assert.equal(ended.call_status, 'ended');
    });

    it('an outbound call: create-phone-call places it through the REST API; answered, it runs on the stream; hung up, it ends', { timeout: 20_000 }, async () => {
      const created = await s.api('POST', '/v2/create-phone-call', { from_number: NUMBER, to_number: CALLEE, override_agent_id: agentId, metadata: { lead: 7 } });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const call = created.json;
      assert.deepEqual(
        { call_type: call.call_type, call_status: call.call_status, direction: call.direction, from_number: call.from_number, to_number: call.to_number },
        { call_type: 'phone_call', call_status: 'registered', direction: 'outbound', from_number: NUMBER, to_number: CALLEE },
      );
      // Twilio got the call with our webhook and status callback, authenticated with the number's credentials.
      const placed = twilio.calls.get(call.telephony_identifier);
      assert.ok(placed, 'telephony_identifier is the CallSid Twilio gave');
      assert.equal(placed.params.To, CALLEE);
      assert.equal(placed.params.From, NUMBER);
      assert.equal(placed.params.Url, `${PUBLIC}/twilio/voice?call_id=${call.call_id}`);
      assert.equal(placed.params.StatusCallback, `${PUBLIC}/twilio/status?call_id=${call.call_id}`);
      assert.ok(twilio.requests.filter((r) => r.path.endsWith('/Calls.json')).every((r) => r.authorized));

      const stream = await twilio.answer(placed.sid);
      await eventually(() => stream.sent('media').length > 5, 10_000);
      assert.equal((await s.api('GET', `/v2/get-call/${call.call_id}`)).json.call_status, 'ongoing');
      stream.stop();
      const ended = await eventually(async () => {
        const row = (await s.api('GET', `/v2/get-call/${call.call_id}`)).json;
        return row.call_status === 'ended' ? row : undefined;
      });
      assert.equal(ended.disconnection_reason, 'user_hangup');
      assert.equal(ended.media.transport, 'twilio');
      assert.deepEqual(ended.metadata, { lead: 7 });
    });

    it('the agent ends the call: the line is hung up once its last words have played, not after the post-call analysis', { timeout: 20_000 }, async () => {
      const byeAgent = await s.flowAgent({ start_node_id: 'bye', nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } }] });
      let release = () => {};
      llmHeld = new Promise<void>((resolve) => (release = resolve));
      try {
        const created = await s.api('POST', '/v2/create-phone-call', { from_number: NUMBER, to_number: CALLEE, override_agent_id: byeAgent });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const stream = await twilio.answer(created.json.telephony_identifier as string);
        void stream.say(silence8k(8_000));
        const first = await Promise.race([stream.closed.then((code) => `closed ${code}`), new Promise((r) => setTimeout(r, 8_000, 'still open'))]);
        assert.equal(first, 'closed 1000', 'the stream closed while the analysis was still being written');
        assert.ok(stream.sent('media').length > 10, 'the goodbye was spoken first');
        await eventually(() => llmWaiting > 0, 5_000);
        assert.equal((await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json.call_status, 'ongoing', 'its results are not stored yet');
        release();
        const ended = await eventually(async () => {
          const row = (await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
          return row.call_status === 'ended' ? row : undefined;
        });
        assert.equal(ended.disconnection_reason, 'agent_hangup');
        assert.ok(ended.call_analysis, 'the analysis is stored with the call');
      } finally {
        llmHeld = undefined;
        llmWaiting = 0;
        release();
      }
    });

    it('unanswered calls end dial_busy, dial_no_answer, dial_failed from signed status callbacks; a forged one is refused; a refused REST request ends dial_failed', { timeout: 20_000 }, async () => {
      const place = async () => (await s.api('POST', '/v2/create-phone-call', { from_number: NUMBER, to_number: CALLEE, override_agent_id: agentId })).json;
      const reasonOf = async (callId: string) => (await s.api('GET', `/v2/get-call/${callId}`)).json.disconnection_reason;
      for (const [status, reason] of [['busy', 'dial_busy'], ['no-answer', 'dial_no_answer'], ['failed', 'dial_failed']] as const) {
        const call = await place();
        assert.equal(await twilio.fail(call.telephony_identifier, status), 204);
        assert.equal(await reasonOf(call.call_id), reason);
      }
      // A status callback not signed by Twilio changes nothing.
      const ringing = await place();
      const forged = await fetch(twilio.route(`${PUBLIC}/twilio/status?call_id=${ringing.call_id}`), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'bm90IGEgc2lnbmF0dXJlIGF0IGFsbA==' },
        body: new URLSearchParams({ AccountSid: twilio.accountSid, CallSid: ringing.telephony_identifier, CallStatus: 'busy', From: NUMBER, To: CALLEE }).toString(),
      });
      assert.equal(forged.status, 403);
      assert.equal((await s.api('GET', `/v2/get-call/${ringing.call_id}`)).json.call_status, 'registered');

      // Never answered and never reported: once it has rung out, the sweep ends it dial_no_answer.
      const silent = await place();
      await s.runtime.store.db.updateTable('calls').set({ token_expires_at: Date.now() - 1 }).where('call_id', '=', silent.call_id).execute();
      await s.runtime.services.lifecycle.sweepUnjoined();
      assert.equal(await reasonOf(silent.call_id), 'dial_no_answer');

      // Credentials Twilio does not accept: its 401 ends the call dial_failed at once.
      const wrong = await s.api('POST', '/import-phone-number', { phone_number: '+14155550200', twilio_account_sid: twilio.accountSid, twilio_auth_token: 'c'.repeat(32), outbound_agent_id: agentId });
      assert.equal(wrong.status, 201);
      const refused = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550200', to_number: CALLEE });
      assert.equal(refused.status, 201);
      assert.deepEqual({ status: refused.json.call_status, reason: refused.json.disconnection_reason }, { status: 'ended', reason: 'dial_failed' });

      // Bad input names the field and creates nothing.
      const before = await callCount();
      for (const [body, field] of [
        [{ from_number: '+14155550999', to_number: CALLEE, override_agent_id: agentId }, 'from_number'],
        [{ from_number: NUMBER, to_number: '555', override_agent_id: agentId }, 'to_number'],
        [{ from_number: NUMBER, to_number: CALLEE }, 'override_agent_id'],
      ] as const) {
        const bad = await s.api('POST', '/v2/create-phone-call', body);
        assert.equal(bad.status, 400, JSON.stringify(bad.json));
        assert.match(bad.json.message, new RegExp(field));
      }
      assert.equal(await callCount(), before);
    });

    it('a forged, unsigned or misdirected webhook gets 403 and creates nothing; so does a stream without a valid ticket', { timeout: 20_000 }, async () => {
      const calls = await callCount();
      const forged = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER, token: 'f'.repeat(32) });
      assert.equal(forged.status, 403);
      assert.equal(forged.stream, undefined);
      const unsigned = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER, signature: null });
      assert.equal(unsigned.status, 403);
      // Signed with the real token, but for another URL (a replay of a request Twilio made elsewhere).
      const elsewhere = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER, signedUrl: `${PUBLIC}/other/voice` });
      assert.equal(elsewhere.status, 403);
      // A number we do not hold, even signed with a real token.
      const unknown = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: '+14155550999' });
      assert.equal(unknown.status, 403);

      // A stream opened by someone else: a start with a made-up ticket, and one with a real ticket of another call.
      const local = twilio.route(`${PUBLIC.replace('https', 'wss')}/twilio/stream`);
      const madeUp = new FakeStream(local, twilio.accountSid, 'CA' + '0'.repeat(32), { number: NUMBER, peer: CALLER, direction: 'inbound', call_id: '', expires_at: String(Date.now() + 60_000), ticket: 'x'.repeat(43) });
      await madeUp.open();
      assert.equal(await madeUp.closed, 1008);
      const real = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: NUMBER });
      real.stream!.stop();
      const stolen = new FakeStream(local, twilio.accountSid, 'CA' + '1'.repeat(32), real.stream!.parameters);
      await stolen.open();
      assert.equal(await stolen.closed, 1008);
      // The same ticket for its own call, a second time (a replay); and with the caller's number changed.
      const replayed = new FakeStream(local, twilio.accountSid, real.callSid, real.stream!.parameters);
      await replayed.open();
      assert.equal(await replayed.closed, 1008);
      const relabelled = new FakeStream(local, twilio.accountSid, real.callSid, { ...real.stream!.parameters, peer: '+14155550666' });
      await relabelled.open();
      assert.equal(await relabelled.closed, 1008);
      await eventually(async () => (await callCount()) === calls + 1, 5_000);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await callCount(), calls + 1, 'only the real call was created');
    });

    // Keys the agent presses (press_digit) reach the far end as in-band DTMF tones on the stream.
    const endedCall = (callSid: string) =>
      eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as Array<Record<string, any>>).find((c) => c.telephony_identifier === callSid && c.call_status === 'ended'), 10_000);
    const toolLines = (call: Record<string, any>) =>
      (call.transcript_with_tool_calls as Array<{ role: string; name?: string; content?: string }>).filter((u) => u.role.startsWith('tool_call')).map((u) => u.name ?? u.content);

    it("a flow's press_digit node: the IVR hears its keys as in-band tones (decoded by Twilio's side); the flow then moves on and speaks", { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent({
        start_node_id: 'menu',
        nodes: [
          { id: 'menu', type: 'press_digit', digits: '1,#', edges: [{ id: 'on', destination_node_id: 'done', transition_condition: { type: 'always' } }] },
          { id: 'done', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
        ],
      });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550400', twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, inbound_agent_id: agentId })).status, 201);
      const { stream, callSid } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: CALLER, to: '+14155550400' });
      assert.ok(stream);
      assert.equal(await stream.closed, 1000, 'the flow reached its end node and hung up');
      assert.equal(stream.keysHeard(), '1#');
      const ended = await endedCall(callSid);
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      assert.deepEqual(toolLines(ended), ['press_digit', 'pressed 1,#']);
      // What Twilio played: each key's 100 ms tone and 100 ms of silence, then "Bye." once they had played.
      const heard = stream.playedAudio();
      assert.ok(firstKeyAt(heard) > 0 && firstKeyAt(heard) <= 8 * 60, `the first key at sample ${firstKeyAt(heard)}`);
      const sounding = [...heard].map((x) => Math.abs(x) > 1000);
      assert.ok(sounding.slice(8 * 105, 8 * 200).every((x) => !x), 'silence after each key');
      assert.equal(decodeKeypad(heard.subarray(8 * 200, 8 * 400), 8000), '#');
      assert.ok(sounding.slice(8 * 400).some((x) => x), 'the end node spoke after the keys');
    });

    it('a service LLM presses keys with its press_digit tool on an outbound Twilio call', { timeout: 20_000 }, async () => {
      const created = await s.api('POST', '/create-retell-llm', { general_prompt: 'You navigate phone menus.', general_tools: [{ type: 'press_digit', name: 'press_keys' }] });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'retell-llm', llm_id: created.json.llm_id } });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550401', twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, outbound_agent_id: agent.json.agent_id })).status, 201);
      llm.push({ toolCalls: [{ name: 'press_keys', arguments: { digit: '42*' } }] });
      const call = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550401', to_number: '+14155550888' });
      assert.equal(call.status, 201, JSON.stringify(call.json));
      const stream = await twilio.answer(call.json.telephony_identifier as string);
      await eventually(() => stream.keysHeard() === '42*', 10_000);
      // Twilio says it played them (the mark after the tones): the press is done.
      await eventually(() => stream.echoedMarks.includes('keys:1'));
      // The echo and a stop sent at once can reach the server in one read, handled before the
      // press's result is recorded (the call then ends with the press cut off): stop a moment later.
      await new Promise((resolve) => setTimeout(resolve, 100));
      stream.stop();
      const ended = await endedCall(call.json.telephony_identifier as string);
      assert.deepEqual(toolLines(ended).slice(0, 2), ['press_keys', 'pressed 42*']);
    });
  });
}

/** The sample where the first key is heard (the end of the 40 ms that make it a key), or -1. */
function firstKeyAt(audio: Int16Array): number {
  for (let end = 160; end <= audio.length; end += 160) if (decodeKeypad(audio.subarray(0, end), 8000) !== '') return end;
  return -1;
}
