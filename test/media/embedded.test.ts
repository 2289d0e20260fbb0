// End to end on the embedded engines, in real time, through the real server and the Node client:
// Flite speech from the caller -> WebSocket -> fvad -> PocketSphinx -> flow (keyword, equation,
// create_lead, end) -> Flite -> WebSocket. Webhooks delivered to a real receiver.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { STORES } from '../helpers/stores.ts';
import { drainDeliveries } from '../webhooks/helpers.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { type MediaServer, concat, silence, startMediaServer } from './helpers.ts';
import { WebCallClient } from '../../src/client/web-call-client.ts';

const flow = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation',
      instruction: { type: 'static_text', text: 'Hello. Sales or support?' },
      edges: [
        { id: 'to_sales', destination_node_id: 'phone', transition_condition: { type: 'keyword', keywords: ['sales', 'buy'] } },
        { id: 'to_support', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['support', 'help'] } },
      ],
    },
    {
      id: 'phone', type: 'conversation',
      instruction: { type: 'static_text', text: 'What is your number?' },
      extract_variables: [{ name: 'phone', type: 'digits' }],
      edges: [{ id: 'got', destination_node_id: 'lead', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'phone', operator: 'exists' }] } }],
    },
    {
      id: 'lead', type: 'create_lead', lead: { name: 'Web caller', phone: '{{phone}}' },
      edges: [{ id: 'done', destination_node_id: 'bye', transition_condition: { type: 'always' } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Thank you. Goodbye.' } },
  ],
};

for (const kind of STORES) {
  describe(`a web call on the embedded engines (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let receiver: Receiver;
    const flite = new FliteTts();
    before(async () => {
      receiver = await Receiver.start();
      s = await startMediaServer(kind.name, { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' } });
    });
    after(async () => {
      await s.close();
      await receiver.close();
      await flite.close();
    });

    const speech = async (text: string) => {
      const parts: Int16Array[] = [];
      for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
      return concat(...parts, silence(900));
    };

    it('greets, hears the caller, follows the transitions, creates a lead, hangs up; results and webhooks', { timeout: 60_000 }, async (t) => {
      if (!hasPocketsphinx()) return t.skip(NO_POCKETSPHINX);
      const hook = await s.api('POST', '/api/v1/webhooks/set.php', { url: receiver.url(), events: ['*'] });
      assert.equal(hook.status, 201, JSON.stringify(hook.json));
      const agentId = await s.flowAgent(flow);
      const first = await speech('i would like to buy something');
      const second = await speech('my number is five five five one two three four');

      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      const callId = created.json.call_id as string;
      const statuses = [created.json.call_status];
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token });
      statuses.push((await s.api('GET', `/v2/get-call/${callId}`)).json.call_status);
      await client.waitFor((e) => e.type === 'agent_stop_talking' && e['utterance_id'] === 'utt_1', 10_000);
      await client.play(first);
      await client.waitFor((e) => e.type === 'agent_stop_talking' && e['utterance_id'] === 'utt_2', 10_000);
      await client.play(second);
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');

      assert.deepEqual(client.transcript.map((u) => `${u.role}: ${u.content}`), [
        'agent: Hello. Sales or support?',
        'user: i would like to buy something',
        'agent: What is your number?',
        'user: my number is five five five one two three four',
        'agent: Thank you. Goodbye.',
      ]);
      const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      statuses.push(call.call_status);
      assert.deepEqual(statuses, ['registered', 'ongoing', 'ended']);
      assert.equal(call.transcript.split('\n').length, 5);
      assert.equal(call.latency.e2e.num, 2);
      t.diagnostic(`e2e ${call.latency.e2e.values.join(', ')} ms; asr ${call.latency.asr.values.join(', ')} ms; tts ${call.latency.tts.values.join(', ')} ms`);
      // The shortest end-of-turn silence (end_of_turn_min_silence_ms, 250 ms) is a floor; the ceiling only catches a stuck turn. Real figures: npm run bench.
      for (const v of call.latency.e2e.values) assert.ok(v >= 250 && v < 5000, `e2e ${v}`);
      assert.ok(call.latency.asr.p50 > 0 && call.latency.tts.p50 > 0);
      const wav = await s.api('GET', `/v2/get-call-recording/${callId}`);
      const wavMs = ((wav.bytes.length - 44) / 4 / 16000) * 1000;
      assert.ok(Math.abs(wavMs - call.duration_ms) < 600, `wav ${Math.round(wavMs)} ms vs call ${call.duration_ms} ms`);
      assert.equal(call.call_analysis.call_successful, true);

      await drainDeliveries(s.runtime.services.webhookPump);
      await receiver.waitFor(2, 10_000);
      const events = receiver.received.map((r) => r.json?.event);
      assert.deepEqual(events.filter((e) => e === 'lead.created').length, 1);
      assert.deepEqual(events.filter((e) => e === 'call.finished').length, 1);
      const lead = receiver.received.find((r) => r.json?.event === 'lead.created')!.json.data;
      assert.equal(lead.phone, '5551234');
      assert.equal(lead.call_id, callId);
      const finished = receiver.received.find((r) => r.json?.event === 'call.finished')!.json.data;
      assert.equal(finished.call_id, callId);
      assert.equal(finished.disconnection_reason, 'agent_hangup');
    });
  });
}
