// Telephone-band detection: energy above 4 kHz (src/providers/audio/band.ts); the pipeline reports
// the call's band once, and a call on the embedded recogniser logs that it will hear badly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BandMeter } from '../../src/providers/audio/band.ts';
import { createResampler } from '../../src/providers/audio/resample.ts';
import { FakeLlm, FakeStt, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { TestClock, feed, makePipeline, silence, concat } from './harness.ts';

/** "Speech" with energy across the band: 300 Hz plus a 6 kHz component at -20 dB. */
function wideSpeech(ms: number): Int16Array {
  const n = Math.round((ms * 16000) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 16000) + 800 * Math.sin((2 * Math.PI * 6000 * i) / 16000));
  return out;
}

async function throughTelephone(pcm: Int16Array): Promise<Int16Array> {
  const down = await createResampler(16000, 8000);
  const up = await createResampler(8000, 16000);
  const out = up.process(down.process(pcm));
  down.close();
  up.close();
  return out;
}

test('BandMeter: wideband audio is wide; the same audio through an 8 kHz channel is narrow', async () => {
  const wide = new BandMeter();
  wide.push(wideSpeech(1000));
  assert.equal(wide.narrowband(), false, `high fraction ${wide.highFraction()}`);
  const narrow = new BandMeter();
  narrow.push(await throughTelephone(wideSpeech(1000)));
  assert.equal(narrow.narrowband(), true, `high fraction ${narrow.highFraction()}`);
  assert.equal(new BandMeter().narrowband(), false, 'nothing heard: no verdict');
});

for (const [name, make, band] of [
  ['wideband', async (ms: number) => wideSpeech(ms), 'wide'],
  ['telephone-band', async (ms: number) => throughTelephone(wideSpeech(ms)), 'narrow'],
] as const) {
  test(`the pipeline reports ${name} caller audio once, after 2 s of speech`, async () => {
    const clock = new TestClock();
    const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(['Yes.', 'Yes.']) });
    const p = makePipeline({ stt: new FakeStt(['one', 'two']), tts: new FakeTts({ msPerChar: 5 }), vad: new EnergyVad(), engine }, clock);
    const reports: Array<{ band: string; atMs: number }> = [];
    p.on('audio_band', (r) => reports.push({ band: r.band, atMs: clock.now() }));
    await p.start();
    await feed(p, clock, concat(silence(300), await make(1500), silence(1500)));
    assert.equal(reports.length, 0, 'not before 2 s of speech');
    await feed(p, clock, concat(await make(1500), silence(1500), await make(1000), silence(1000)));
    assert.deepEqual(reports.map((r) => r.band), [band]);
    await p.close();
  });
}
