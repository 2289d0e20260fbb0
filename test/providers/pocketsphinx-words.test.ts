// Word times from the embedded recogniser (issue 26): library-mode PocketSphinx reads its
// segments once per utterance and gives each word's frames, ms from the utterance's first sample;
// fillers and silences are not words. Real decodes of Flite speech.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { PocketsphinxStt, probeLibrary } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttResult, SttStream } from '../../src/providers/stt.ts';
import { concat, silence } from '../voice/harness.ts';

const LIBRARY = { skip: probeLibrary().ok ? false : 'libpocketsphinx cannot be called in-process here' };

async function speech(tts: FliteTts, text: string): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  return concat(...parts);
}

/** First and last sample louder than the noise floor, ms: where Flite's speech is in `pcm`. */
function voicedSpan(pcm: Int16Array): { fromMs: number; toMs: number } {
  let first = -1;
  let last = -1;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i]!) > 300) {
      if (first < 0) first = i;
      last = i;
    }
  }
  return { fromMs: first / 16, toMs: last / 16 };
}

/** The words of `r` match its text in order, one after another, inside [fromMs, toMs] give or take 80 ms (the analysis window, the frame, Flite's quiet edges). */
function assertTimed(r: SttResult, fromMs: number, toMs: number): void {
  assert.ok(r.words, `words for "${r.text}"`);
  assert.deepEqual(r.words.map((w) => w.word), r.text.split(' '), 'the text\'s words, in order, no fillers');
  let previousEnd = -Infinity;
  for (const w of r.words) {
    assert.ok(w.startMs < w.endMs, `${w.word}: ${w.startMs}-${w.endMs}`);
    assert.ok(w.startMs >= previousEnd, `${w.word} starts after the word before ends (${w.startMs} < ${previousEnd})`);
    assert.ok(w.startMs >= fromMs - 80 && w.endMs <= toMs + 80, `${w.word} (${w.startMs}-${w.endMs} ms) lies in the speech, ${fromMs}-${toMs} ms`);
    previousEnd = w.endMs;
  }
}

test('pocketsphinx library mode: each word of the text with its times inside the utterance, on every utterance of a stream (the decoder reused), directed ones included', LIBRARY, async () => {
  const tts = new FliteTts();
  const stt = new PocketsphinxStt({ mode: 'library' });
  let s: SttStream | undefined;
  try {
    s = await stt.openStream();
    const first = await speech(tts, 'i would like to book an appointment');
    const span = voicedSpan(first);
    // 700 ms of silence first: the words are timed from the utterance's first sample, fillers skipped.
    s.write(concat(silence(700), first, silence(500)));
    const a = await s.finalize();
    assert.match(a.text, /appointment/);
    assertTimed(a, 700 + span.fromMs, 700 + span.toMs);
    assert.ok(a.words![0]!.startMs >= 600, `the silence before is no word (first word at ${a.words![0]!.startMs} ms)`);

    // The same decoder again, with a pause longer than the front end's 0.5 s inside the
    // utterance: its frames are dropped without saying where, so no times rather than wrong ones.
    const second = await speech(tts, 'thank you');
    s.write(concat(silence(300), second, silence(1_200), second, silence(400)));
    const paused = await s.finalize();
    assert.match(paused.text, /thank you.*thank you/);
    assert.equal(paused.words, undefined);

    // A closed expectation, on the decoder's third utterance (times from its own first sample): the grammar's decode gives the words.
    s.expect!({ closed: true, phrases: ['yes', 'no', 'stop', 'go'], values: ['digits'] });
    const pin = await speech(tts, 'four two seven one');
    const span3 = voicedSpan(pin);
    s.write(concat(silence(300), pin, silence(400)));
    const c = await s.finalize();
    assert.equal(c.text, 'four two seven one');
    assertTimed(c, 300 + span3.fromMs, 300 + span3.toMs);
  } finally {
    await s?.close();
    await stt.close();
    await tts.close();
  }
});

test('pocketsphinx library mode: an utterance cut at maxUtteranceMs keeps its later part\'s words on the utterance\'s own timeline', LIBRARY, async () => {
  const tts = new FliteTts();
  const stt = new PocketsphinxStt({ mode: 'library', maxUtteranceMs: 1_000 });
  let s: SttStream | undefined;
  try {
    s = await stt.openStream();
    const said = await speech(tts, 'thank you very much');
    const span = voicedSpan(said);
    // The first part (1 s of silence) is cut and holds no word; the speech is in the second part.
    s.write(silence(1_000));
    s.write(concat(silence(300), said, silence(400)));
    const r = await s.finalize();
    assert.match(r.text, /thank you/);
    assertTimed(r, 1_300 + span.fromMs, 1_300 + span.toMs);
  } finally {
    await s?.close();
    await stt.close();
    await tts.close();
  }
});
