/**
 * Noise suppression of the caller's audio (issue 25, the agent's `denoising_mode`): RNNoise through
 * 16k -> 48k -> 16k keeps speech and removes steady noise, and the pipeline's VAD and recogniser
 * hear the denoised audio when a denoiser is given, the audio as it came when none is.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createNoiseSuppressor } from '../../src/providers/audio/rnnoise.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { FRAME_SAMPLES } from '../../src/voice/frames.ts';
import { Recorder, TestClock, concat, feed, makePipeline, silence } from './harness.ts';

/** Deterministic white noise of RMS about `level`. */
function whiteNoise(ms: number, level: number, seed = 7): Int16Array {
  const out = new Int16Array(Math.round(ms * 16));
  let s = seed;
  for (let i = 0; i < out.length; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out[i] = Math.round((s / 0x7fffffff - 0.5) * 2 * level * Math.sqrt(3));
  }
  return out;
}

function rmsOf(pcm: Int16Array): number {
  let e = 0;
  for (const v of pcm) e += v * v;
  return Math.sqrt(e / Math.max(1, pcm.length));
}

/** Runs `pcm` through a fresh suppressor in 20 ms frames; checks every frame keeps its length. */
async function denoise(pcm: Int16Array): Promise<Int16Array> {
  const s = await createNoiseSuppressor();
  const out = new Int16Array(pcm.length);
  for (let o = 0; o + FRAME_SAMPLES <= pcm.length; o += FRAME_SAMPLES) {
    const frame = s.process(pcm.subarray(o, o + FRAME_SAMPLES));
    assert.equal(frame.length, FRAME_SAMPLES);
    out.set(frame, o);
  }
  s.close();
  s.close();
  return out;
}

describe('the noise suppressor (RNNoise at 48 kHz)', () => {
  const tts = new FliteTts();
  after(() => tts.close());

  it('removes steady noise by over 20 dB and keeps speech within 3 dB', async () => {
    const noise = whiteNoise(2000, 2000);
    const quiet = await denoise(noise);
    const settled = rmsOf(quiet.subarray(16_000)); // after the network's first second
    assert.ok(settled < rmsOf(noise) / 10, `noise ${rmsOf(noise).toFixed(0)} -> ${settled.toFixed(0)}`);

    const chunks: Int16Array[] = [];
    for await (const c of tts.synthesize('Please call me back tomorrow morning about my order.')) chunks.push(c);
    const speech = concat(...chunks);
    const kept = rmsOf(await denoise(speech));
    const ratioDb = 20 * Math.log10(kept / rmsOf(speech));
    assert.ok(ratioDb > -3, `speech level changed by ${ratioDb.toFixed(1)} dB`);
  });
});

describe('the pipeline with and without a denoiser', () => {
  const flow = { start_node_id: 'n', nodes: [{ id: 'n', type: 'conversation' as const, instruction: { type: 'static_text' as const, text: 'Hi.' }, edges: [] }] };

  /** Two seconds of loud fan noise then silence: whether the VAD took it for the caller speaking, and the denoisers made. */
  async function hearNoise(withDenoiser: boolean) {
    const clock = new TestClock();
    let made = 0;
    const denoiser = async () => {
      made++;
      return createNoiseSuppressor();
    };
    const stt = new FakeStt(['fan noise']);
    const p = makePipeline({ stt, tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }), startSpeaker: 'user', ...(withDenoiser ? { denoiser } : {}) }, clock);
    const rec = new Recorder(p, clock);
    await p.start();
    await feed(p, clock, concat(silence(400), whiteNoise(2000, 2000), silence(1000)));
    await p.close();
    return { starts: rec.events.filter((e) => e.type === 'user_start_talking').length, utterances: stt.utterances.length, made };
  }

  it('hears noise as speech without one, and nothing with one', async () => {
    const raw = await hearNoise(false);
    assert.ok(raw.starts >= 1 && raw.utterances >= 1, `without: ${JSON.stringify(raw)}`);
    const clean = await hearNoise(true);
    assert.deepEqual(clean, { starts: 0, utterances: 0, made: 1 });
  });
});
