// Storage policies applied to a finished web call's transcript, analysis and recording, at the end
// of the call and when update-call tightens the policy afterwards; on both stores (the recording a
// file on SQLite, chunks in the database on PostgreSQL: what is stored is asked of the store).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const flow = {
  start_node_id: 'ask',
  nodes: [
    {
      id: 'ask', type: 'conversation',
      instruction: { type: 'static_text', text: 'Your name and number please.' },
      extract_variables: [{ name: 'name', type: 'name' }, { name: 'phone', type: 'digits' }],
      edges: [{ id: 'done', destination_node_id: 'bye', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'phone', operator: 'exists' }] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Thank you, goodbye.' } },
  ],
};
const SAID = 'my name is john smith and my number is five five five one two three four';

for (const kind of STORES) {
  describe(`storage policies of web calls on ${kind.name}`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let providers: ReturnType<typeof fakeProviders>;
    before(async () => {
      providers = fakeProviders([]);
      s = await startMediaServer(kind.name, { providers });
    });
    after(() => s.close());

    /** One call on an agent with `policy`: greeting, the user's PII, goodbye. */
    async function pizzaCall(policy: string) {
      const agentId = await s.flowAgent(flow, { data_storage_setting: policy });
      providers.stt.push(SAID);
      const client = await s.call(agentId);
      await client.waitFor('agent_stop_talking', 5_000);
      await client.play(concat(tone(800), silence(700)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      return (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
    }

    const recordingPath = (callId: string) => `recordings/${callId}.wav`;
    /** Whether the store holds the call's recording: its file, or its chunks. */
    const stored = async (callId: string) => {
      const size = await s.runtime.services.recordings.size(callId, recordingPath(callId));
      if (kind.name === 'postgres') {
        assert.ok(!fs.existsSync(path.join(s.testStore.dataDir, 'recordings', `${callId}.wav`)), 'no file on PostgreSQL');
      }
      return size !== null;
    };
    const readRecording = async (callId: string) => {
      const size = await s.runtime.services.recordings.size(callId, recordingPath(callId));
      return buffer(s.runtime.services.recordings.read(callId, recordingPath(callId), 0, size! - 1));
    };

    it('everything keeps the transcript and the recording as they were', async () => {
      const call = await pizzaCall('everything');
      assert.match(call.transcript, /User: my name is john smith and my number is five five five/);
      assert.ok(await stored(call.call_id));
    });

    it('everything_except_pii redacts transcript and summary and silences the PII span on both channels', async () => {
      const call = await pizzaCall('everything_except_pii');
      assert.equal(call.data_storage_setting, 'everything_except_pii');
      assert.doesNotMatch(call.transcript, /john|smith|five five five/i);
      assert.match(call.transcript, /User: my name is (\[name\] ?)+and my number is \[number\]/);
      assert.doesNotMatch(JSON.stringify(call.transcript_object), /john|five five/i);
      assert.doesNotMatch(call.call_analysis.call_summary, /john|five five/i);
      assert.ok(call.recording_url, 'recording kept, with the span silenced');
      const wav = await readRecording(call.call_id);
      const user = call.transcript_object.find((u: { role: string }) => u.role === 'user');
      const peak = (fromMs: number, toMs: number) => {
        let max = 0;
        for (let i = Math.floor((fromMs * 16) ) * 4 + 44; i < Math.min(wav.length, Math.floor(toMs * 16) * 4 + 44); i += 2) max = Math.max(max, Math.abs(wav.readInt16LE(i)));
        return max;
      };
      assert.equal(peak(user.start_ms, user.end_ms), 0, 'the PII utterance is silent');
      const agent = call.transcript_object.find((u: { role: string }) => u.role === 'agent');
      assert.ok(peak(agent.start_ms, agent.end_ms) > 1000, 'the rest of the recording is kept');
    });

    it('basic_attributes_only keeps status, timestamps, duration, latency and reason only', async () => {
      const call = await pizzaCall('basic_attributes_only');
      for (const field of ['transcript', 'transcript_object', 'recording_url', 'call_analysis']) assert.equal(call[field], null, field);
      assert.equal(call.call_status, 'ended');
      assert.equal(call.disconnection_reason, 'agent_hangup');
      assert.ok(call.duration_ms > 0);
      assert.equal(call.latency.e2e.num, 1);
      assert.ok(!(await stored(call.call_id)), 'no recording stored');
      const rec = await s.api('GET', `/v2/get-call-recording/${call.call_id}`);
      assert.equal(rec.status, 422);
    });

    it('tightening after the end redacts (names found again) and then deletes the recording', async () => {
      const call = await pizzaCall('everything');
      assert.ok(await stored(call.call_id));
      const pii = await s.api('PATCH', `/v2/update-call/${call.call_id}`, { data_storage_setting: 'everything_except_pii' });
      assert.equal(pii.status, 200);
      assert.match(pii.json.transcript, /my name is (\[name\] ?)+and my number is \[number\]/);
      assert.ok(await stored(call.call_id));
      const basic = await s.api('PATCH', `/v2/update-call/${call.call_id}`, { data_storage_setting: 'basic_attributes_only' });
      assert.equal(basic.status, 200);
      assert.equal(basic.json.transcript, null);
      assert.equal(basic.json.recording_url, null);
      assert.ok(!(await stored(call.call_id)), 'the recording is deleted');
      assert.equal((await s.api('GET', `/v2/get-call-recording/${call.call_id}`)).status, 422);
    });

    it('deleting a call deletes its recording', async () => {
      const call = await pizzaCall('everything');
      assert.ok(await stored(call.call_id));
      assert.equal((await s.api('DELETE', `/v2/delete-call/${call.call_id}`)).status, 204);
      assert.ok(!(await stored(call.call_id)));
    });
  });
}
