// The per-turn recognition timeout: a recogniser that never answers cannot silence the agent.
// Lock-step: the clock moves 20 ms per frame fed, no real time passes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EnergyVad, FakeLlm, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import type { SttProvider } from '../../src/providers/stt.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { DEFAULT_RECOGNITION_TIMEOUT_MS } from '../../src/voice/pipeline.ts';
import { Recorder, TestClock, feed, makePipeline, silence, tone } from './harness.ts';

/** A user-first call whose recogniser holds every finalize: the caller speaks once, then is silent. */
async function heldTurn(options: { recognitionTimeoutMs?: number } = {}) {
  const clock = new TestClock();
  const stt = new FakeStt(['what are your opening hours']);
  stt.hold();
  let finalizedAt: number | undefined;
  // The recogniser as the pipeline sees it, noting the clock when the turn is finalized.
  const observed: SttProvider = {
    id: stt.id,
    languages: () => stt.languages(),
    async openStream(o) {
      const s = await stt.openStream(o);
      return {
        write: (pcm) => s.write(pcm),
        finalize(signal) {
          finalizedAt ??= clock.now();
          return s.finalize(signal);
        },
        close: () => s.close(),
      };
    },
  };
  const llm = new FakeLlm(['We open at nine.']);
  const p = makePipeline({ stt: observed, tts: new FakeTts({ msPerChar: 10 }), vad: new EnergyVad(), engine: new LlmEngine({ config: {}, llm }), startSpeaker: 'user', ...options }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, silence(300));
  await feed(p, clock, tone(800));
  // The turn ends after the endpointing silence (500 ms): that is when the recogniser is asked.
  await feed(p, clock, silence(700));
  assert.ok(finalizedAt !== undefined, 'the turn ended and was finalized');
  return { clock, stt, llm, p, rec, finalizedAt };
}

test(`a finalize that never settles fails the turn ${DEFAULT_RECOGNITION_TIMEOUT_MS} ms after the end of the turn: the call ends with error_asr`, async () => {
  const { clock, p, rec, llm, finalizedAt } = await heldTurn();
  // Just before the deadline nothing has happened: the agent waits for the transcript.
  await feed(p, clock, silence(finalizedAt + DEFAULT_RECOGNITION_TIMEOUT_MS - 40 - clock.now()));
  assert.equal(rec.hangup, undefined);
  assert.equal(rec.errors.length, 0);
  // Before the fix the pipeline waited here forever.
  await feed(p, clock, silence(200));
  assert.deepEqual(rec.hangup, { reason: 'error_asr' });
  const hangupAt = rec.events.find((e) => e.type === 'hangup')!.atMs;
  assert.ok(hangupAt >= finalizedAt + DEFAULT_RECOGNITION_TIMEOUT_MS && hangupAt <= finalizedAt + DEFAULT_RECOGNITION_TIMEOUT_MS + 20, `ended at +${hangupAt - finalizedAt} ms`);
  assert.equal(rec.errors.length, 1);
  assert.equal(rec.errors[0]?.reason, 'error_asr');
  assert.match(rec.errors[0]?.message ?? '', /no transcript within 5000 ms/);
  assert.equal(llm.requests.length, 0, 'nothing was answered');
  await p.close();
});

test('the timeout is configurable, and a transcript that arrives in time is answered as usual', async () => {
  const { clock, stt, p, rec, llm, finalizedAt } = await heldTurn({ recognitionTimeoutMs: 2_000 });
  await feed(p, clock, silence(finalizedAt + 1_900 - clock.now()));
  stt.release(); // the recogniser answers 100 ms before the deadline
  await feed(p, clock, silence(2_000));
  assert.equal(rec.hangup, undefined);
  assert.deepEqual(rec.errors, []);
  assert.equal(llm.requests.length, 1);
  assert.deepEqual(rec.transcript.map((u) => [u.role, u.text]), [
    ['user', 'what are your opening hours'],
    ['agent', 'We open at nine.'],
  ]);
  await p.close();
});

test('a timed-out finalize is aborted, so the recogniser can drop its work', async () => {
  const { clock, stt, p, rec, finalizedAt } = await heldTurn({ recognitionTimeoutMs: 1_000 });
  await feed(p, clock, silence(finalizedAt + 1_100 - clock.now()));
  assert.deepEqual(rec.hangup, { reason: 'error_asr' });
  // The held finalize was given up: releasing the recogniser now answers nothing.
  stt.release();
  await feed(p, clock, silence(200));
  assert.equal(rec.transcript.length, 0);
  await p.close();
});
