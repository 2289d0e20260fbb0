// How streamed text becomes pieces to synthesize (voice/stages/engine.stage.ts): the first piece
// goes as soon as a sentence or a clause ends, or FIRST_PIECE_WORDS words have streamed in, without
// waiting for the rest of a long first clause (issue 26); text that then waits IDLE_FLUSH_MS with
// nothing more arriving (a stalled stream, or one that ends without content_complete) goes as it is.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIRST_PIECE_WORDS, IDLE_FLUSH_MS, sentenceStage } from '../../src/voice/stages/engine.stage.ts';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import type { EngineOutput } from '../../src/voice/engines/types.ts';
import { streamed } from './harness.ts';

const tick = () => new Promise((r) => setImmediate(r));

test(`the first piece goes after ${FIRST_PIECE_WORDS} whole words of a long first clause; the rest goes as sentences`, async () => {
  const { outputs, push } = streamed();
  const pieces: string[] = [];
  const reading = (async () => {
    for await (const p of sentenceStage(outputs)) if (p.type === 'sentence') pieces.push(p.text);
  })();
  const clause = 'I have looked at every one of the flights leaving tomorrow morning from the main airport to the coast';
  const words = clause.split(' ');
  for (const [i, word] of words.entries()) {
    push({ type: 'text', text: i === 0 ? word : ` ${word}` });
    await tick();
    // A word is whole once the next one starts: the fifth is known whole when the sixth arrives.
    if (i === FIRST_PIECE_WORDS) assert.deepEqual(pieces, [words.slice(0, FIRST_PIECE_WORDS).join(' ')], 'spoken before the clause ends');
    if (i < FIRST_PIECE_WORDS) assert.deepEqual(pieces, [], `not after ${i + 1} words`);
  }
  push({ type: 'text', text: ', and the earliest leaves at seven. Shall I book it?' });
  push(null);
  await reading;
  assert.deepEqual(pieces, [
    words.slice(0, FIRST_PIECE_WORDS).join(' '),
    `${words.slice(FIRST_PIECE_WORDS).join(' ')}, and the earliest leaves at seven.`,
    'Shall I book it?',
  ]);
});

test('a short first sentence or clause still goes whole, and text that arrives at once is not cut by words', async () => {
  const { outputs, push } = streamed();
  const pieces: string[] = [];
  const reading = (async () => {
    for await (const p of sentenceStage(outputs)) if (p.type === 'sentence') pieces.push(p.text);
  })();
  push({ type: 'text', text: 'Your order number forty two shipped today. Thanks for waiting' });
  await tick();
  assert.deepEqual(pieces, ['Your order number forty two shipped today.']);
  push({ type: 'text', text: ' so patiently today.' });
  push(null);
  await reading;
  assert.deepEqual(pieces, ['Your order number forty two shipped today.', 'Thanks for waiting so patiently today.']);
  // A static message (one output, as a flow node's text) is spoken whole.
  const whole: string[] = [];
  async function* once(): AsyncIterable<EngineOutput> {
    yield { type: 'text', text: 'Thanks for calling Acme support today' };
  }
  for await (const p of sentenceStage(once())) if (p.type === 'sentence') whole.push(p.text);
  assert.deepEqual(whole, ['Thanks for calling Acme support today']);
});

test(`text left waiting ${IDLE_FLUSH_MS} ms with nothing more arriving is flushed, first piece or trailing words, without content_complete`, async () => {
  const time = new ManualScheduler();
  const { outputs, push } = streamed();
  const pieces: string[] = [];
  const reading = (async () => {
    for await (const p of sentenceStage(outputs, undefined, time)) if (p.type === 'sentence') pieces.push(p.text);
  })();
  push({ type: 'text', text: 'One moment' });
  await tick();
  time.advance(IDLE_FLUSH_MS - 1);
  await tick();
  assert.deepEqual(pieces, [], 'two words, no sentence end: not yet');
  time.advance(1);
  await tick();
  assert.deepEqual(pieces, ['One moment'], 'a short idle gap sends the first piece');
  push({ type: 'text', text: ' while I look. Your booking is for' });
  await tick();
  assert.deepEqual(pieces, ['One moment', 'while I look.']);
  push({ type: 'text', text: ' Friday' });
  await tick();
  time.advance(IDLE_FLUSH_MS - 1);
  await tick();
  push({ type: 'text', text: ' at noon' });
  await tick();
  time.advance(IDLE_FLUSH_MS - 1);
  await tick();
  assert.deepEqual(pieces, ['One moment', 'while I look.'], 'each arrival restarts the wait');
  // The stream stalls for good (no content_complete ever comes): its trailing words are still spoken.
  time.advance(1);
  await tick();
  assert.deepEqual(pieces, ['One moment', 'while I look.', 'Your booking is for Friday at noon']);
  push(null);
  await reading;
  assert.equal(pieces.length, 3);
});
