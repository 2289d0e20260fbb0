/**
 * Backchannels (Retell's enable_backchannel, backchannel_frequency, backchannel_words; issue 26):
 * the rule of when (BackchannelTimer), the out-of-band playout, and a long user turn through the
 * pipeline on the lock-step harness: quiet words during the user's pauses, none when off, and the
 * turn itself unchanged (one user utterance, one answer, nothing cut off, no barge-in).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnergyVad, FakeLlm, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { BACKCHANNEL_GAIN, BackchannelTimer, type BackchannelSettings } from '../../src/voice/backchannel.ts';
import { PacedPlayout } from '../../src/voice/playout.ts';
import { Recorder, TestClock, concat, feed, makePipeline, silence, tone } from './harness.ts';

/** Frames of one utterance: `chunks` stretches of `speechMs` speech, each followed by `pauseMs` of silence. */
function* utterance(chunks: number, speechMs: number, pauseMs: number) {
  let offsetMs = 0;
  let voicedMs = 0;
  for (let c = 0; c < chunks; c++) {
    for (let t = 0; t < speechMs; t += 20, offsetMs += 20) yield { offsetMs, voicedMs: (voicedMs += 20), silenceMs: 0 };
    for (let s = 20; s <= pauseMs; s += 20, offsetMs += 20) yield { offsetMs, voicedMs, silenceMs: s };
  }
}

/** Where `timer` backchannels over the frames, ms. */
function fired(timer: BackchannelTimer, frames: Iterable<{ offsetMs: number; voicedMs: number; silenceMs: number }>, free = () => true): number[] {
  const at: number[] = [];
  for (const f of frames) if (timer.frame(f, free())) at.push(f.offsetMs);
  return at;
}

describe('when to backchannel', () => {
  it('in a pause after 3 s of speech, never twice within 4 s, never at the start of a turn', () => {
    // 900 ms of speech and a 160 ms pause, 12 times: 10.8 s of speech.
    const at = fired(new BackchannelTimer(1), utterance(12, 900, 160));
    // The first after 3.6 s of speech (4 chunks), in the 100th ms of the pause; then every 4 chunks.
    assert.deepEqual(at, [4 * 1060 - 160 + 80, 8 * 1060 - 160 + 80, 12 * 1060 - 160 + 80]);
    assert.deepEqual(fired(new BackchannelTimer(1), utterance(3, 900, 160)), [], 'not within 3 s of the turn');
    // Pauses too short to count, or none: nothing.
    assert.deepEqual(fired(new BackchannelTimer(1), utterance(12, 900, 80)), []);
  });

  it('takes the share of opportunities backchannel_frequency says, evenly', () => {
    const count = (frequency: number) => fired(new BackchannelTimer(frequency), utterance(60, 900, 160)).length;
    assert.equal(count(1), 15);
    assert.equal(count(0), 0);
    assert.equal(count(0.5), 8);
    assert.equal(count(0.8), 12);
  });

  it('only while the agent is free, and counts speech from each new utterance', () => {
    const timer = new BackchannelTimer(1);
    assert.deepEqual(fired(timer, utterance(8, 900, 160), () => false), [], 'not while the agent is busy');
    timer.utteranceStarted();
    assert.equal(fired(timer, utterance(3, 900, 160)).length, 0, 'a new utterance starts from zero speech');
  });
});

describe('out-of-band playout', () => {
  it('paces the frames without reply events, and a reply ready while it plays starts after its last frame', async () => {
    const clock = new TestClock();
    const events: string[] = [];
    const out = new PacedPlayout({ scheduler: clock, timers: false, leadMs: 40, events: { started: () => events.push('started'), frame: () => events.push('frame'), stopped: () => events.push('stopped') } });
    const frames = Array.from({ length: 10 }, () => new Int16Array(320));
    assert.equal(out.aside(frames), true);
    assert.equal(out.aside(frames), false, 'one at a time');
    assert.deepEqual(events, ['frame', 'frame'], 'paced: the lead only');
    for (let i = 0; i < 3; i++) {
      clock.advance(20);
      out.tick();
    }
    assert.equal(events.length, 5);
    out.open();
    await out.push(new Int16Array(320));
    assert.deepEqual(events.slice(5), [], 'the reply waits: the backchannel is not cut');
    for (let i = 0; i < 10; i++) {
      clock.advance(20);
      out.tick();
    }
    assert.equal(out.asidePlaying, false);
    assert.deepEqual(events.slice(5), ['frame', 'frame', 'frame', 'frame', 'frame', 'started', 'frame'], 'all ten frames of the word, then the reply');
    out.close();
  });
});

const REPLY = 'I am sorry to hear that.';

/** A long user turn (tone speech with short pauses) and its answer, through a pipeline with `backchannel`. */
async function longTurn(backchannel: BackchannelSettings | undefined, options: { volume?: number } = {}, chunks = 8) {
  const clock = new TestClock();
  const llm = new FakeLlm([REPLY]);
  const engine = new LlmEngine({ config: { begin_message: '' }, llm });
  const tts = new FakeTts({ msPerChar: 40, amplitude: 3000 });
  const p = makePipeline({ stt: new FakeStt(['my laptop came with a cracked screen and no charger']), tts, vad: new EnergyVad(), engine, ...(backchannel ? { backchannel } : {}), ...options }, clock);
  const rec = new Recorder(p, clock);
  const said: Array<{ atMs: number; word: string }> = [];
  p.on('backchannel', (b) => said.push(b));
  const frames: Array<{ atMs: number; peak: number }> = [];
  p.on('agent_audio', (pcm) => frames.push({ atMs: p.elapsedMs(), peak: Math.max(...pcm) }));
  await p.start();
  await feed(p, clock, silence(300));
  const speechFrom = p.elapsedMs();
  const speech: Int16Array[] = [];
  for (let i = 0; i < chunks; i++) speech.push(tone(900), silence(160));
  await feed(p, clock, concat(...speech));
  const speechTo = p.elapsedMs();
  await feed(p, clock, silence(3000));
  await p.close();
  return { said, rec, llm, tts, during: frames.filter((f) => f.atMs > speechFrom && f.atMs <= speechTo + 100), frames, speechFrom };
}

describe('backchannels in a call (lock-step)', () => {
  it("says quiet words in the user's pauses, in turn, out of the transcript, and the turn is answered once", async () => {
    const { said, rec, llm, tts, during, speechFrom } = await longTurn({ words: ['uh-huh', 'I see'] });
    assert.deepEqual(said.map((b) => b.word), ['uh-huh', 'I see']);
    // After 3.6 s of speech, once 100 ms of the pause have gone by; then 4 chunks later.
    assert.deepEqual(said.map((b) => b.atMs - speechFrom), [4 * 1060 - 160 + 100, 8 * 1060 - 160 + 100]);
    // Whole, while the user spoke: 'uh-huh' and 'I see' at 40 ms a character.
    assert.equal(during.length, (('uh-huh'.length + 'I see'.length) * 40) / 20);
    assert.ok(during.every((f) => f.peak <= Math.round(3000 * BACKCHANNEL_GAIN) + 1), 'quietly');
    assert.deepEqual(tts.texts.slice(0, 2), ['uh-huh', 'I see'], 'synthesised once, at the start of the call');
    assert.equal(tts.texts.filter((t) => t === 'uh-huh').length, 1);
    assert.deepEqual(rec.transcript.map((u) => [u.role, u.text, u.cutOff ?? false]), [
      ['user', 'my laptop came with a cracked screen and no charger', false],
      ['agent', REPLY, false],
    ]);
    assert.equal(llm.requests.length, 1, 'one answer, to the whole turn');
    assert.deepEqual(rec.events.filter((e) => e.type.startsWith('agent_')).map((e) => [e.type, e.data]), [
      ['agent_start_talking', undefined],
      ['agent_stop_talking', { interrupted: false }],
    ], 'no reply event for a backchannel, no barge-in');
  });

  it('said in the pause that ends the turn, it is heard whole before the reply', async () => {
    // Four chunks: the backchannel comes in the 100th ms of the last pause, which ends the turn;
    // the word (760 ms at 40 ms a character) outlasts the end of turn and the reply's synthesis.
    const word = 'I see what you mean';
    const { said, frames, rec } = await longTurn({ words: [word] }, {}, 4);
    assert.deepEqual(said.map((b) => b.word), [word]);
    const quiet = Math.round(3000 * BACKCHANNEL_GAIN) + 1;
    const firstLoud = frames.findIndex((f) => f.peak > quiet);
    assert.ok(firstLoud > 0, 'the reply was spoken');
    assert.equal(frames.slice(0, firstLoud).filter((f) => f.peak > 0).length, (word.length * 40) / 20, 'every frame of the backchannel, before the reply');
    assert.ok(frames.slice(firstLoud).every((f) => f.peak === 0 || f.peak > quiet), 'none after the reply began');
    assert.deepEqual(rec.transcript.map((u) => [u.role, u.cutOff ?? false]), [['user', false], ['agent', false]]);
  });

  it('is the default words at the agent volume, and nothing when off', async () => {
    const on = await longTurn({}, { volume: 0.5 });
    assert.deepEqual(on.said.map((b) => b.word), ['okay', 'uh-huh']);
    assert.ok(on.during.every((f) => f.peak <= Math.round(1500 * BACKCHANNEL_GAIN) + 1));
    const off = await longTurn(undefined);
    assert.deepEqual([off.said.length, off.during.length], [0, 0], 'silent while the user speaks');
    assert.deepEqual(off.rec.transcript.map((u) => u.text), on.rec.transcript.map((u) => u.text), 'the same turn and answer');
    assert.deepEqual((await longTurn({ frequency: 0 })).said, [], 'frequency 0: never');
  });

  it('never while the agent speaks', async () => {
    const clock = new TestClock();
    const long = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} goes on.`).join(' ');
    const engine = new LlmEngine({ config: {}, llm: new FakeLlm([long]) });
    // Sensitivity 0: the user's speech over the agent does not interrupt it.
    const p = makePipeline({ stt: new FakeStt(['right']), tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine, interruptionSensitivity: 0, backchannel: { frequency: 1 } }, clock);
    const said: unknown[] = [];
    p.on('backchannel', (b) => said.push(b));
    await p.start();
    const speech: Int16Array[] = [silence(1000)];
    for (let i = 0; i < 8; i++) speech.push(tone(900), silence(160));
    await feed(p, clock, concat(...speech));
    await p.close();
    assert.deepEqual(said, []);
  });
});
