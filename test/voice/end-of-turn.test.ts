// Adaptive end of turn (src/voice/end-of-turn.ts, VoicePipelineOptions.endOfTurn): a short silence
// ends a turn that sounds complete, a long one a turn that trails off; the agent's
// responsiveness and minimum / maximum silence set how long.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeLlm, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { completeness, endOfTurnSilenceMs, type EndOfTurnSettings } from '../../src/voice/end-of-turn.ts';
import type { VoicePipelineOptions } from '../../src/voice/pipeline.ts';
import type { TurnTrace } from '../../src/voice/turn-trace.ts';
import { TestClock, Recorder, WordStt, feed, makePipeline, silence, tone, concat } from './harness.ts';

const DEFAULTS: EndOfTurnSettings = { responsiveness: 1, minSilenceMs: 250, maxSilenceMs: 1200 };

test('completeness: trailing conjunctions, prepositions, fillers and phone-number groups are incomplete', () => {
  for (const text of ['i would like to', 'my number is five five five', 'my number is 555', 'one two three four five six', 'i want a pizza and', 'um', 'so the thing is uh', 'book it for the', 'i need', 'well i\'m', 'my name is john m', 'my zip code is nine for one', 'number is due for six']) {
    assert.equal(completeness(text), 'incomplete', text);
  }
  for (const text of ['i would like to book an appointment', 'yes', 'support please.', 'my number is five five five one two three four', 'sales', 'two', 'it is for two', 'i would like to order']) {
    assert.equal(completeness(text), 'complete', text);
  }
  assert.equal(completeness(''), 'unknown');
  assert.equal(completeness('  ... '), 'unknown');
});

test('endOfTurnSilenceMs: the minimum for a complete turn at responsiveness 1, the maximum for an incomplete one', () => {
  assert.equal(endOfTurnSilenceMs('complete', DEFAULTS), 250);
  assert.equal(endOfTurnSilenceMs('incomplete', DEFAULTS), 1200);
  assert.equal(endOfTurnSilenceMs('unknown', DEFAULTS), 488);
  const slow = { ...DEFAULTS, responsiveness: 0 };
  assert.equal(endOfTurnSilenceMs('complete', slow), 725);
  assert.equal(endOfTurnSilenceMs('unknown', slow), 963);
  assert.equal(endOfTurnSilenceMs('incomplete', slow), 1200);
  // A maximum below the minimum is read as the minimum.
  assert.equal(endOfTurnSilenceMs('incomplete', { responsiveness: 1, minSilenceMs: 600, maxSilenceMs: 300 }), 600);
});

async function converse(said: string, audio: Int16Array, extra: Partial<VoicePipelineOptions>, pendingMs?: number) {
  const clock = new TestClock();
  const stt = new WordStt(said, 200, pendingMs);
  const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(['Sure.', 'Right.', 'Okay.']) });
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine, ...extra }, clock);
  const rec = new Recorder(p, clock);
  const ends: number[] = [];
  p.on('latency', (l) => ends.push(l.e2eMs));
  await p.start();
  await feed(p, clock, audio);
  await p.close();
  return { rec, ends };
}

test('a 700 ms pause after "i would like to" does not end the turn (the fixed 500 ms end of turn cuts in there)', async () => {
  // WordStt hears a word per 200 ms of speech: 800 ms of speech is "i would like to".
  const paused = concat(silence(300), tone(800), silence(700), tone(600), silence(2000));
  const adaptive = await converse('i would like to book an appointment', paused, { endOfTurn: DEFAULTS });
  assert.deepEqual(adaptive.rec.transcript.map((u) => [u.role, u.text]), [
    ['user', 'i would like to book an appointment'],
    ['agent', 'Sure.'],
  ]);
  // The fixed 500 ms end of turn cuts in at the pause.
  const fixed = await converse('i would like to book an appointment', paused, {});
  assert.deepEqual(fixed.rec.transcript.filter((u) => u.role === 'user').map((u) => u.text), ['i would like to', 'book an appointment']);
  assert.equal(fixed.rec.transcript.filter((u) => u.role === 'agent').length, 2);
});

test('a complete sentence is answered after the minimum silence; a lower responsiveness waits longer', async () => {
  const audio = concat(silence(300), tone(1000), silence(2500));
  const fast = await converse('i need an early appointment', audio, { endOfTurn: DEFAULTS });
  const slow = await converse('i need an early appointment', audio, { endOfTurn: { ...DEFAULTS, responsiveness: 0 } });
  assert.equal(fast.ends.length, 1);
  assert.equal(slow.ends.length, 1);
  // e2e = end of speech to the first agent audio: the end-of-turn silence plus the fakes' work.
  assert.ok(fast.ends[0]! >= 250 && fast.ends[0]! < 400, `fast ${fast.ends[0]}`);
  assert.ok(slow.ends[0]! >= 700 && slow.ends[0]! < 900, `slow ${slow.ends[0]}`);
});

test('an utterance trailing off ends after the maximum silence', async () => {
  const audio = concat(silence(300), tone(1200), silence(2500));
  const r = await converse('my number is five five five', audio, { endOfTurn: { ...DEFAULTS, maxSilenceMs: 1500 } });
  // Three digits of a number being dictated: incomplete, so the turn ends after the maximum.
  assert.equal(r.ends.length, 1);
  assert.ok(r.ends[0]! >= 1500 && r.ends[0]! < 1650, `e2e ${r.ends[0]}`);
});

test('a recogniser that has not decoded 250 ms of the silence yet is not judged: the turn waits for the maximum', async () => {
  const audio = concat(silence(300), tone(1000), silence(2500));
  // 1 s behind: it never shows 250 ms of decoded silence before the maximum (1200 ms).
  const behind = await converse('i need an early appointment', audio, { endOfTurn: DEFAULTS }, 1_000);
  assert.ok(behind.ends[0]! >= 1200 && behind.ends[0]! < 1350, `behind ${behind.ends[0]}`);
  // Caught up (nothing pending): judged once 250 ms of silence are decoded, then complete.
  const current = await converse('i need an early appointment', audio, { endOfTurn: DEFAULTS }, 0);
  assert.ok(current.ends[0]! >= 250 && current.ends[0]! < 400, `current ${current.ends[0]}`);
});

test('each reply traces where its time went: the end-of-turn decision, why, and the stages after it', async () => {
  const audio = concat(silence(300), tone(1000), silence(2500));
  const trace = async (pendingMs: number) => {
    const traces: TurnTrace[] = [];
    const r = await converse('i need an early appointment', audio, { endOfTurn: DEFAULTS, turnTrace: (t) => traces.push(t) }, pendingMs);
    assert.equal(traces.length, 1);
    assert.equal(traces[0]!.e2eMs, r.ends[0]);
    return traces[0]!;
  };
  const current = await trace(0);
  assert.deepEqual({ ...current.endOfTurn, pendingMs: undefined }, { silenceMs: 250, reason: 'complete', pendingMs: undefined, interim: 'i need an early appointment' });
  assert.ok(current.endOfTurnMs >= 250 && current.endOfTurnMs < 300, `decided at ${current.endOfTurnMs}`);
  assert.ok(current.finalMs >= current.endOfTurnMs && current.engineMs >= current.finalMs, JSON.stringify(current));
  assert.ok(current.firstTextMs! >= current.engineMs && current.firstAudioMs! >= current.firstTextMs! && current.e2eMs >= current.firstAudioMs!, JSON.stringify(current));
  assert.equal(current.queuedMs, 0);
  // 1 s behind: never settled, so the maximum ended it, and the trace says so.
  const behind = await trace(1_000);
  assert.equal(behind.endOfTurn?.reason, 'unsettled');
  assert.equal(behind.endOfTurn?.silenceMs, 1200);
  assert.ok((behind.endOfTurn?.pendingMs ?? 0) >= 1_000);
  assert.ok(behind.endOfTurnMs >= 1200 && behind.endOfTurnMs < 1250, `decided at ${behind.endOfTurnMs}`);
});
