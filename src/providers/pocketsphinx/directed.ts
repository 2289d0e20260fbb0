// Directed recognition (SttStream.expect): the JSGF grammar a closed expectation decodes with, and
// the test that keeps an answer outside it reachable. Pure: the decoder thread (decoder.worker.ts)
// decodes with the grammar and reads the language model's word lattice.
import { SPOKEN_DIGITS } from '../../lib/spoken-digits.ts';
import type { DigitCount, ExpectedValue, SttExpectation } from '../stt.ts';
import { containsPhrase, type PhraseEvidence, type TimedWord } from './expected-phrase.ts';

/** Said before a digit to repeat it ("double five" is 55), as extractDigits reads it. */
const REPEAT_WORDS = ['double', 'triple'];
const NUMBER_WORDS = [
  'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen',
  'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety', 'hundred', 'thousand', 'and',
];
const YES_NO = ['yes', 'yeah', 'yep', 'no', 'nope', 'correct'];

/** Longest grammar handed to the decoder, in alternatives: a closed node has at most 100 keywords. */
const MAX_ALTERNATIVES = 150;

/** A grammar for one closed expectation, and what it can answer. */
export interface DirectedGrammar {
  /** JSGF source (ps_set_jsgf_string). */
  jsgf: string;
  /** Single answers (keywords, yes/no words): a hypothesis equal to one is a phrase answer. */
  phrases: readonly string[];
  /** Every word the grammar uses, to check against the dictionary before it is set. */
  words: readonly string[];
  /** The words of its value sequences (digits, a number); empty when it has none. */
  sequence: readonly string[];
  /** How many digits its digit sequence has, when the node states it. */
  digitCount?: DigitCount;
}

/** JSGF tokens: lower-case letters, digits and apostrophes (normalizePhrase's alphabet). */
const TOKEN = /^[\p{Ll}\p{N}']+$/u;

/**
 * The grammar of a closed expectation: one of its phrases, or a sequence of digit words (digits)
 * or number words (number). Undefined for an open expectation or one with nothing to decode (the
 * language model decodes those).
 */
export function directedGrammar(expectation: SttExpectation): DirectedGrammar | undefined {
  if (!expectation.closed) return undefined;
  const values = new Set<ExpectedValue>(expectation.values);
  const phrases = new Set<string>();
  for (const p of expectation.phrases) {
    const words = p.split(' ').filter(Boolean);
    if (words.length > 0 && words.every((w) => TOKEN.test(w))) phrases.add(words.join(' '));
  }
  if (values.has('yes_no')) for (const w of YES_NO) phrases.add(w);
  // The digits' and numbers' words are decoded as sequences, not as single answers: a loop of
  // digit words, each perhaps after "double" or "triple", and for a number its number words too.
  const number = values.has('number');
  // A digit count is the digits' alone: a number's words are not digits.
  const count = !number && values.has('digits') ? expectation.digitCount : undefined;
  // "double five" is two digits: repeats only where two or more digits are expected. A lone
  // "oh" is a caller's hesitation far more often than a zero: one digit is said "zero".
  const one = count !== undefined && count.max < 2;
  const repeats = one ? [] : REPEAT_WORDS;
  const digitWords = one ? SPOKEN_DIGITS.filter((w) => w !== 'oh') : SPOKEN_DIGITS;
  const sequence = number || values.has('digits') ? [...repeats, ...digitWords, ...(number ? NUMBER_WORDS : [])] : [];
  for (const w of sequence) phrases.delete(w);
  if (phrases.size === 0 && sequence.length === 0) return undefined;
  const single = [...phrases].slice(0, MAX_ALTERNATIVES);
  const alternatives = [...single, ...(sequence.length > 0 ? [count ? countedValues(count, repeats.length > 0) : '<value>+'] : [])];
  const value = [`${repeats.length > 0 ? `[${repeats.join(' | ')}] ` : ''}<digit>`, ...(number ? NUMBER_WORDS : [])];
  const jsgf = [
    '#JSGF V1.0;',
    'grammar directed;',
    `public <answer> = ${alternatives.join(' | ')};`,
    ...(sequence.length > 0 ? [`<value> = ${value.join(' | ')};`, `<digit> = ${digitWords.join(' | ')};`] : []),
    '',
  ].join('\n');
  const words = [...new Set([...single.flatMap((p) => p.split(' ')), ...sequence])];
  return { jsgf, phrases: single, words, sequence, ...(count ? { digitCount: count } : {}) };
}

/**
 * A sequence of `count.min` to `count.max` digits as JSGF: that many `<value>`s, the ones past the
 * fewest optional (unbounded: a loop). A value after "double" or "triple" is two or three digits,
 * so with repeats the fewest values are a third of the fewest digits; the answer's digits are
 * counted again where they are used (spokenDigits, the flow's extraction).
 */
function countedValues(count: DigitCount, repeats: boolean): string {
  const fewest = Math.max(1, repeats ? Math.ceil(count.min / 3) : count.min);
  const required = Array<string>(fewest).fill('<value>');
  const optional = Number.isFinite(count.max) ? Array<string>(Math.max(0, count.max - fewest)).fill('[<value>]') : ['<value>*'];
  return `(${[...required, ...optional].join(' ')})`;
}

/** How many digits digit words spell: "double five one" is three. */
export function spokenDigits(words: readonly string[]): number {
  let n = 0;
  let repeat = 1;
  for (const w of words) {
    if (REPEAT_WORDS.includes(w)) {
      repeat = w === 'double' ? 2 : 3;
      continue;
    }
    if (SPOKEN_DIGITS.includes(w)) n += repeat;
    repeat = 1;
  }
  return n;
}

/**
 * How probable the grammar's answer must be in the open language model's word lattice of the same
 * audio to be taken: below it, the caller said something the node did not expect, and the
 * language model's text is kept (the else edge stays reachable). Lower than PHRASE_MIN_POSTERIOR
 * (expected-phrase.ts): here the grammar has already chosen which phrase to look for. Chosen on
 * the real-speech benchmark (BENCHMARKS.md, "Directed recognition").
 */
export const DIRECTED_MIN_POSTERIOR = 1e-6;

/**
 * Whether a phrase the grammar heard is taken although the language model's lattice does not
 * hold it: when the language model heard at most one word more than the phrase has (a short
 * answer it misheard, as real callers' one-word answers mostly are); a sentence is longer. On the
 * real-speech commands at 16 kHz the lattice alone confirmed too few right answers (1 of 8).
 */
export function phrasePlausible(phraseWords: number, openWords: number): boolean {
  return openWords <= phraseWords + 1;
}

/**
 * Whether the language model's text holds, besides the grammar's answer, another of the grammar's
 * phrases that is not part of the answer ("go on" where the edges are "go" and "on"). The flow
 * would take whichever edge comes first; the grammar, which chose one phrase for the whole
 * utterance, knows which was said.
 */
export function holdsOtherPhrase(grammar: DirectedGrammar, answer: string, open: string): boolean {
  return grammar.phrases.some((p) => p !== answer && !containsPhrase(answer, [p]) && containsPhrase(open, [p]));
}

/**
 * Whether a value sequence the grammar heard (digits, a number) is taken: the open language model
 * must not have heard much more speech than the sequence (a sentence forced into digit words);
 * nor, when the grammar is `counted` (a digit count), much less ("seven" forced into four digits).
 */
export function sequencePlausible(sequenceWords: number, openWords: number, counted = false): boolean {
  // A counted grammar must say that many digits: not many more than the language model heard words.
  return openWords <= 2 * sequenceWords + 1 && (!counted || sequenceWords <= 2 * openWords + 1);
}

/**
 * Whether the open language model heard nothing but the grammar's value words ("seven", "six
 * zero"): then its words are the answer, not the grammar's. Forced to a digit loop, the grammar
 * adds digits where the language model heard breath or noise at a single digit's edges ("eight
 * seven", "six zero" for "six"); the language model, free to hear any word, heard only these.
 * Not when the node states a digit count and they are more ("two five eight" where one digit
 * is expected): the grammar's answer has that count.
 */
export function openHeardSequence(grammar: DirectedGrammar, open: string): boolean {
  const heard = open.split(' ').filter(Boolean);
  if (heard.length === 0 || !heard.every((w) => grammar.sequence.includes(w))) return false;
  // More digits than the node takes: digits heard in breath or noise, the grammar's answer is
  // the caller's. Fewer stand: the grammar would make up the ones it lacks.
  return !grammar.digitCount || spokenDigits(heard) <= grammar.digitCount.max;
}

/**
 * How much of the speech an expected phrase found only in the lattice must span to be put in the
 * text at a closed node: 30 % of the time from the open model's first word to its last. A short
 * keyword faint in the lattice of a longer sentence ("yes" over "is", "go" inside "middle", "buy"
 * over a caller's first "i") is a false accept, the else edge's answer taken away; an answer the
 * open model misheard fills most of its utterance. Chosen on the real-speech benchmark
 * (BENCHMARKS.md, "False accepts at closed nodes"): out-of-grammar sentences taking a keyword edge
 * 6/8 -> 0/8, commands at 16 kHz 47/58 -> 46/58, telephone band unchanged; 20 % and 30 % alike.
 */
export const DIRECTED_MIN_SHARE = 0.3;

/**
 * How probable a phrase found only in the lattice must be to be taken at a closed node however
 * little of the speech it spans: 0.05. A keyword said inside a sentence ("hi i need to book a
 * visit with the doctor", Flite kal16, heard "but the visit") is a short stretch of a long
 * utterance, as the false accepts DIRECTED_MIN_SHARE keeps out are, but the lattice holds it far
 * more strongly: "book" at 0.09 over 10 % of the speech, against 2e-4 to 0.013 for every keyword
 * that took a sentence the wrong way on the real-speech set (BENCHMARKS.md, "False accepts at
 * closed nodes": "yes" over "is" 0.009, "go" inside "middle" 0.001, "on" 0.003-0.013) and 0.012
 * for "support" over "visit with" in the same sentence.
 */
export const DIRECTED_STRONG_POSTERIOR = 0.05;

/**
 * Whether `found` may stand for the caller's answer: it spans at least DIRECTED_MIN_SHARE of the
 * speech on `path` (the open model's best path), or the lattice holds it at DIRECTED_STRONG_POSTERIOR.
 */
export function spansAnswer(found: PhraseEvidence, path: readonly TimedWord[]): boolean {
  if (path.length === 0 || found.posterior >= DIRECTED_STRONG_POSTERIOR) return true;
  const speech = path.at(-1)!.end - path[0]!.start + 1;
  return found.end - found.start + 1 >= DIRECTED_MIN_SHARE * speech;
}
