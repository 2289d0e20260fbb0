// Barge-in with the real VAD (fvad) on real speech (Flite): the agent's audio stops within 200 ms
// of the user's speech onset, the reply is cancelled, and the transcript marks it cut off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeLlm, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { FvadProvider } from '../../src/providers/vad/fvad.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { TestClock, Recorder, feed, makePipeline, silence, concat } from './harness.ts';

test('barge-in on real speech: agent audio stops within 200 ms of onset, reply cut off', async () => {
  const flite = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of flite.synthesize('wait a moment please', { voiceId: 'flite-kal16' })) parts.push(c);
  await flite.close();
  const speech = concat(...parts);
  // True onset: first 20 ms frame whose level is clearly above silence.
  let onsetFrame = 0;
  for (let i = 0; i + 320 <= speech.length; i += 320, onsetFrame++) {
    let s = 0;
    for (const x of speech.subarray(i, i + 320)) s += x * x;
    if (Math.sqrt(s / 320) > 300) break;
  }
  const clock = new TestClock();
  const llm = new FakeLlm(['Let me tell you about all of our plans, one by one, in great detail, for a long time. There are many of them.', 'Sure.']);
  const p = makePipeline({ stt: new FakeStt(['wait a moment please']), tts: new FakeTts(), vad: new FvadProvider(), engine: new LlmEngine({ config: {}, llm }) }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, silence(1500, 20));
  assert.ok(rec.agentFrames.length > 0, 'agent is talking');
  const onsetAt = clock.now() + (onsetFrame + 1) * 20;
  await feed(p, clock, concat(speech, silence(1500, 20)));
  const stop = rec.events.find((e) => e.type === 'agent_stop_talking' && e.atMs >= onsetAt - 20);
  assert.ok(stop, 'agent stopped');
  assert.deepEqual(stop.data, { interrupted: true });
  const last = Math.max(...rec.agentFrames.filter((f) => f.atMs <= stop.atMs).map((f) => f.atMs));
  const ranPast = last + 80 - onsetAt; // frames sent run at most outputLeadMs (80) ahead
  assert.ok(ranPast <= 200, `agent audio ran ${ranPast} ms past the onset`);
  const cut = rec.transcript.find((u) => u.role === 'agent' && u.cutOff);
  assert.ok(cut && cut.text.length > 0, 'cut-off reply in the transcript');
  assert.deepEqual(rec.transcript.filter((u) => u.role === 'user').map((u) => u.text), ['wait a moment please']);
  await p.close();
});
