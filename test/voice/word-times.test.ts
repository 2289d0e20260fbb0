/**
 * Word times in the transcript (issue 26): a recogniser's words (ms from the start of the
 * utterance's audio, pre-roll included) are placed on the call's timeline by the pipeline and
 * answered in `transcript_object` as Retell's `{word, start, end}`, seconds from the call's start.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EnergyVad, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import type { SttProvider, SttStream } from '../../src/providers/stt.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { toTranscriptObject } from '../../src/voice/transcript.ts';
import { Recorder, TestClock, concat, feed, makePipeline, silence, tone } from './harness.ts';

/** A recogniser that answers each utterance with two words at fixed times in its audio. */
function timedStt(): SttProvider {
  return {
    id: 'timed',
    languages: () => ['en-US'],
    async openStream(): Promise<SttStream> {
      return {
        write() {},
        finalize: async () => ({ text: 'hello there', words: [{ word: 'hello', startMs: 200, endMs: 500 }, { word: 'there', startMs: 500, endMs: 900 }] }),
        close: async () => {},
      };
    },
  };
}

test("a user utterance's words go on the call's timeline, and into transcript_object in seconds", async () => {
  const clock = new TestClock();
  const flow = { start_node_id: 'n', nodes: [{ id: 'n', type: 'conversation' as const, instruction: { type: 'static_text' as const, text: 'Hi.' }, edges: [] }] };
  const p = makePipeline({ stt: timedStt(), tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }), startSpeaker: 'user' }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, concat(silence(1000), tone(800), silence(1500)));
  await p.close();
  const user = rec.transcript.find((u) => u.role === 'user')!;
  // The recogniser heard the utterance from its pre-roll: the 200 ms up to the onset (the third
  // voiced frame, at 1040 ms), so from 860 ms.
  assert.equal(user.startMs, 1000);
  assert.deepEqual(user.words, [{ word: 'hello', startMs: 1060, endMs: 1360 }, { word: 'there', startMs: 1360, endMs: 1760 }]);
  const entry = toTranscriptObject(rec.transcript).find((e) => e.role === 'user')!;
  assert.deepEqual(entry.words, [{ word: 'hello', start: 1.06, end: 1.36 }, { word: 'there', start: 1.36, end: 1.76 }]);
  assert.equal(toTranscriptObject(rec.transcript).find((e) => e.role === 'agent')!.words, undefined, 'no word times where the synthesiser gives none');
});
