/**
 * Retell's agent fields that change what the caller hears (issue 26, item 7): `begin_message_delay_ms`, `volume` (a gain on
 * the synthesized speech, clipped at full scale) and `normalize_for_speech` (numbers, currencies,
 * dates and times spoken as words; the transcript keeps the text as written), through the
 * pipeline on the lock-step harness, and the normaliser itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import type { ConversationFlow } from '../../src/voice/engines/types.ts';
import { normaliseForSpeech, numberToWords, ordinalToWords } from '../../src/voice/speech-normaliser.ts';
import { withBeginDelay } from '../../src/voice/begin-delay.ts';
import { applyVolume } from '../../src/voice/volume.ts';
import { Recorder, TestClock, feed, makePipeline, silence } from './harness.ts';

const GREETING = 'Your total is $12.50, due 2026-11-26 at 3:30 pm.';
const flow: ConversationFlow = {
  start_node_id: 'greet',
  nodes: [{ id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: GREETING }, edges: [] }],
};

/** The greeting through a pipeline with `options`: what the synthesiser was given (joined), the transcript, the highest sample played. */
async function greet(options: { volume?: number; normaliseForSpeech?: boolean }, amplitude = 3000) {
  const clock = new TestClock();
  const tts = new FakeTts({ msPerChar: 10, amplitude });
  const p = makePipeline({ stt: new FakeStt([]), tts, vad: new EnergyVad(), engine: new FlowEngine({ flow }), ...options }, clock);
  const rec = new Recorder(p, clock);
  let peak = 0;
  p.on('agent_audio', (pcm) => {
    for (const v of pcm) peak = Math.max(peak, v);
  });
  await p.start();
  await feed(p, clock, silence(1500));
  await p.close();
  return { texts: tts.texts.join(' '), transcript: rec.transcript.map((u) => u.text), peak };
}

describe('volume and normalize_for_speech in a call', () => {
  it('speaks as written at full level by default', async () => {
    const plain = await greet({});
    assert.equal(plain.texts, GREETING);
    assert.equal(plain.peak, 3000);
  });

  it('normalises what is spoken, not what is transcribed', async () => {
    const spoken = await greet({ normaliseForSpeech: true });
    assert.equal(spoken.texts, 'Your total is twelve dollars and fifty cents, due November twenty-sixth, twenty twenty-six at three thirty p m.');
    assert.deepEqual(spoken.transcript, [GREETING]);
  });

  it('applies the volume as a gain, clipped at full scale', async () => {
    assert.equal((await greet({ volume: 0.5 })).peak, 1500);
    assert.equal((await greet({ volume: 0 })).peak, 0);
    assert.equal((await greet({ volume: 2 }, 20_000)).peak, 32_767, 'clipped, not wrapped');
  });
});

describe('begin_message_delay_ms', () => {
  /** When the agent's first audio is played, on the lock-step clock, with the opening delayed by `delayMs`. */
  async function firstAudioAt(delayMs: number): Promise<number | undefined> {
    const clock = new TestClock();
    const engine = withBeginDelay(new FlowEngine({ flow }), delayMs, clock);
    const p = makePipeline({ stt: new FakeStt([]), tts: new FakeTts({ msPerChar: 10 }), vad: new EnergyVad(), engine }, clock);
    const rec = new Recorder(p, clock);
    await p.start();
    await feed(p, clock, silence(3500));
    await p.close();
    return rec.agentFrames[0]?.atMs;
  }

  it('delays the opening by the delay, and no more', async () => {
    const at = (await firstAudioAt(0))!;
    const delayed = (await firstAudioAt(1500))!;
    assert.ok(delayed - at >= 1480 && delayed - at <= 1540, `delayed by 1500: ${delayed} ms (undelayed ${at})`);
  });

  it('ends the wait when the call ends', async () => {
    const clock = new TestClock();
    const engine = withBeginDelay(new FlowEngine({ flow }), 5000, clock);
    const p = makePipeline({ stt: new FakeStt([]), tts: new FakeTts(), vad: new EnergyVad(), engine }, clock);
    const rec = new Recorder(p, clock);
    await p.start();
    await feed(p, clock, silence(200));
    await p.close();
    assert.equal(rec.agentFrames.length, 0);
  });
});

describe('applyVolume', () => {
  it('scales, rounds and clips both ways', () => {
    assert.deepEqual([...applyVolume(Int16Array.from([100, -100, 20_000, -20_000, 3]), 2)], [200, -200, 32_767, -32_768, 6]);
    const same = Int16Array.from([1, 2]);
    assert.equal(applyVolume(same, 1), same, 'unity gain copies nothing');
  });
});

describe('normaliseForSpeech (English)', () => {
  it('writes numbers and ordinals as words', () => {
    assert.equal(numberToWords(0), 'zero');
    assert.equal(numberToWords(1234), 'one thousand two hundred thirty-four');
    assert.equal(numberToWords(2_000_015), 'two million fifteen');
    assert.equal(ordinalToWords(21), 'twenty-first');
    assert.equal(ordinalToWords(12), 'twelfth');
    assert.equal(ordinalToWords(40), 'fortieth');
  });

  it('reads currencies, percentages, times, dates, grouped and decimal numbers and digit runs', () => {
    const cases: Array<[string, string]> = [
      ['$1', 'one dollar'],
      ['$0.99', 'ninety-nine cents'],
      ['£1,200', 'one thousand two hundred pounds'],
      ['€3.05', 'three euros and five cents'],
      ['15% off', 'fifteen percent off'],
      ['at 10:00', "at ten o'clock"],
      ['7:05 a.m.', 'seven oh five a m'],
      ['11/26/2026', 'November twenty-sixth, twenty twenty-six'],
      ['2009-01-02', 'January second, two thousand nine'],
      ['the 3rd floor', 'the third floor'],
      ['3.5 stars', 'three point five stars'],
      ['call 4155550100', 'call four one five five five five zero one zero zero'],
      ['no numbers here', 'no numbers here'],
    ];
    for (const [written, spoken] of cases) assert.equal(normaliseForSpeech(written), spoken, written);
  });

  it('leaves what is not a date or time alone', () => {
    assert.equal(normaliseForSpeech('13/45/2026'), 'thirteen/forty-five/two thousand twenty-six');
    assert.equal(normaliseForSpeech('25:99'), 'twenty-five:ninety-nine');
  });
});
