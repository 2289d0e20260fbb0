// The embedded recogniser's biasing, without the decoder: which lattice evidence is taken, and
// where the phrase lands in the text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containsPhrase, PHRASE_MIN_POSTERIOR, strongest, withPhrase, withPhraseWords, type TimedWord } from '../../src/providers/pocketsphinx/expected-phrase.ts';

/** "hi i need to but the visit", 20 frames a word. */
const path: TimedWord[] = 'hi i need to but the visit'.split(' ').map((word, i) => ({ word, start: 20 * i, end: 20 * i + 19 }));

test('an expected phrase replaces the words whose frames it mostly covers, and only those', () => {
  assert.equal(withPhrase(path, { phrase: 'book', start: 82, end: 101, posterior: 0.05 }), 'hi i need to book the visit');
  // "book a" over "but the" and half of "to": "to" keeps half of its frames, so it stays.
  assert.equal(withPhrase(path, { phrase: 'book a', start: 70, end: 119, posterior: 0.05 }), 'hi i need to book a visit');
});

test('an expected phrase over no word of the path (silence) is inserted where it was spoken, or at the end', () => {
  const gap: TimedWord[] = [{ word: 'yes', start: 0, end: 30 }, { word: 'please', start: 80, end: 120 }];
  assert.equal(withPhrase(gap, { phrase: 'book', start: 40, end: 70, posterior: 0.5 }), 'yes book please');
  assert.equal(withPhrase(gap, { phrase: 'book', start: 130, end: 150, posterior: 0.5 }), 'yes please book');
  assert.equal(withPhrase([], { phrase: 'book', start: 0, end: 20, posterior: 0.5 }), 'book');
});

test('the most probable evidence at or above the floor is taken; fainter evidence is not', () => {
  const e = (phrase: string, posterior: number) => ({ phrase, start: 0, end: 10, posterior });
  assert.equal(strongest([e('book', 0.002), e('appointment', 0.3)])?.phrase, 'appointment');
  assert.equal(strongest([e('book', PHRASE_MIN_POSTERIOR)])?.phrase, 'book');
  assert.equal(strongest([e('book', PHRASE_MIN_POSTERIOR / 2)]), undefined);
  assert.equal(strongest([]), undefined);
});

test('a phrase counts in the text as the flow\'s keyword edges match it: whole words, any case', () => {
  assert.ok(containsPhrase('I want to Book a visit', ['book']));
  assert.ok(containsPhrase('talk  to a person please', ['talk to a person']));
  assert.ok(!containsPhrase('the bookings are full', ['book']));
  assert.ok(!containsPhrase('anything', ['']));
});

test('withPhraseWords: the phrase\'s own words where the lattice placed them, in withPhrase\'s order; none when their frames are unknown', () => {
  const path: TimedWord[] = [{ word: 'hi', start: 10, end: 30 }, { word: 'i', start: 31, end: 40 }, { word: 'look', start: 82, end: 101 }, { word: 'visit', start: 120, end: 160 }];
  const found = { phrase: 'book a', start: 80, end: 119, posterior: 0.05, words: [{ word: 'book', start: 80, end: 104 }, { word: 'a', start: 105, end: 119 }] };
  assert.equal(withPhrase(path, found), 'hi i book a visit');
  assert.deepEqual(withPhraseWords(path, found)!.map((w) => `${w.word}@${w.start}-${w.end}`), ['hi@10-30', 'i@31-40', 'book@80-104', 'a@105-119', 'visit@120-160']);
  assert.equal(withPhraseWords(path, { phrase: 'book', start: 82, end: 101, posterior: 0.05 }), undefined);
});
