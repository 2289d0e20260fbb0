// Interim hypotheses from a streaming recogniser reach the pipeline's `user_interim` event while
// the user speaks, and stop when the turn ends (src/voice/pipeline.ts, SttOpenOptions.onInterim).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeLlm, FakeStt, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { TestClock, Recorder, feed, makePipeline, silence, tone, concat } from './harness.ts';

test('a streaming recogniser\'s interim hypotheses are emitted while the user speaks, the final transcript after', async () => {
  const clock = new TestClock();
  const stt = new FakeStt(['i would like to book an appointment'], { interims: true });
  const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(['Sure.']) });
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine }, clock);
  const rec = new Recorder(p, clock);
  const interims: Array<{ text: string; atMs: number; transcriptLength: number }> = [];
  p.on('user_interim', ({ text }) => interims.push({ text, atMs: clock.now(), transcriptLength: rec.transcript.length }));
  await p.start();
  await feed(p, clock, concat(silence(300), tone(1200), silence(1500)));
  assert.ok(interims.length >= 4, `interims: ${JSON.stringify(interims)}`);
  // Each is the whole text so far, growing word by word, before the final transcript exists.
  for (const [i, it] of interims.entries()) {
    assert.ok('i would like to book an appointment'.startsWith(it.text), it.text);
    if (i > 0) assert.ok(it.text.length > interims[i - 1]!.text.length);
    assert.equal(it.transcriptLength, 0, 'emitted before the final transcript');
  }
  assert.deepEqual(rec.transcript.map((u) => [u.role, u.text]), [
    ['user', 'i would like to book an appointment'],
    ['agent', 'Sure.'],
  ]);
  await p.close();
});

test('a recogniser without interim hypotheses: no user_interim events, the turn works as before', async () => {
  const clock = new TestClock();
  const stt = new FakeStt(['hello there']);
  const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(['Hi.']) });
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine }, clock);
  const rec = new Recorder(p, clock);
  let interims = 0;
  p.on('user_interim', () => interims++);
  await p.start();
  await feed(p, clock, concat(silence(300), tone(800), silence(1500)));
  assert.equal(interims, 0);
  assert.deepEqual(rec.transcript.map((u) => u.text), ['hello there', 'Hi.']);
  await p.close();
});
