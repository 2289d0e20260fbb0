// Interim hypotheses reach the client as `update` messages with `final: false` while the caller
// speaks; the committed transcript follows with `final: true` (docs/media-protocol.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const flow = {
  start_node_id: 'greet',
  nodes: [
    { id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['appointment'] } }] },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Booked.' } },
  ],
};

describe('interim transcripts over the media protocol', () => {
  it('sends update final:false with the words heard so far, then update final:true with the utterance', async () => {
    const providers = { ...fakeProviders([]), stt: new FakeStt(['i want an appointment'], { interims: true }) };
    const s = await startMediaServer('sqlite', { providers });
    try {
      const client = await s.call(await s.flowAgent(flow));
      await client.waitFor('agent_stop_talking', 5_000);
      await client.play(concat(tone(1_000), silence(1_000)));
      await client.waitFor('call_ended', 10_000);
      const updates = client.events.filter((e) => e.type === 'update');
      const interim = updates.filter((u) => u.final === false);
      assert.ok(interim.length >= 2, `interim updates: ${JSON.stringify(interim)}`);
      for (const u of interim) {
        const last = u.transcript.at(-1)!;
        assert.equal(last.role, 'user');
        assert.ok('i want an appointment'.startsWith(last.content), last.content);
        assert.deepEqual(u.transcript.slice(0, -1).map((e) => e.content), ['Hi.'], 'the committed utterances come first');
      }
      const firstFinalWithUser = updates.findIndex((u) => u.final && u.transcript.some((e) => e.role === 'user'));
      assert.ok(firstFinalWithUser > updates.indexOf(interim.at(-1)!), 'the final update comes after the interims');
      assert.equal(updates[firstFinalWithUser]!.transcript.find((e) => e.role === 'user')!.content, 'i want an appointment');
    } finally {
      await s.close();
    }
  });
});
