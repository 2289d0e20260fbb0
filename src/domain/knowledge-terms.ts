/**
 * The terms retrieval ranks by (issue 29): the words of chunks and of the caller's question,
 * lower-cased, stopwords left out, and stemmed with Porter's algorithm (the `stemmer` package), the
 * same way for every store, so "crashes" finds "crashed". A question's terms carry weights: the
 * caller's last turn counts fully, the turn before it half.
 *
 * Measured and left out (BENCHMARKS.md, "Knowledge retrieval in the process" and "Knowledge
 * recall: passage evidence"): expanding a word with a built-in list of its synonyms (even at half
 * weight) and pseudo-relevance feedback (the top chunks' own terms added to the query, RM3 too)
 * lowered recall on the benchmark's questions or left it as it was; so did WordNet synonyms
 * restricted to the base's terms, at low weights; lemmas beside the stems changed no answer.
 */
import { MAX_QUERY_TERMS, STOPWORDS } from './knowledge-base.ts';
import { stemmer } from 'stemmer';

/** A stemmed term of a question and how much a match counts (1: a word of the caller's last turn). */
export interface QueryTerm {
  term: string;
  weight: number;
}

/** Weight of a term from the caller's turn before the last (each earlier turn halves it again). */
export const EARLIER_TURN_WEIGHT = 0.5;
/**
 * What callers say around a question without it being about anything, beyond STOPWORDS: left out
 * of questions only (a document may well be about "help").
 */
const CONVERSATIONAL = new Set(
  ('hey sorry excuse wondering wonder trying try able possible maybe actually really just also still ' +
    'somebody someone anyone something anything way kind sort thing things let lets say said mean going gonna wanna ' +
    'happen happens happened work works')
    .split(' '),
);

function tokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

const stems = new Map<string, string>();
/** A word's stem, remembered (a base's words repeat). */
function stem(word: string): string {
  let found = stems.get(word);
  if (found === undefined) {
    // Porter's algorithm (the `stemmer` package, as SQLite's FTS5 `porter` tokenizer stems), on words of a-z only.
    found = /^[a-z]+$/.test(word) ? stemmer(word) : word;
    if (stems.size >= 100_000) stems.clear();
    stems.set(word, found);
  }
  return found;
}

/** The terms of a chunk's text as retrieval indexes them: stemmed words, stopwords left out, in order. */
export function indexTerms(text: string): string[] {
  const terms: string[] = [];
  for (const word of tokens(text)) if (word.length <= 64 && !STOPWORDS.has(word)) terms.push(stem(word));
  return terms;
}

/**
 * The terms of a chunk's text sentence by sentence (as `indexTerms` gives them, in order: joined,
 * they are `indexTerms(text)`). A sentence ends at a line break (a list item, a table row, a
 * paragraph) or at `.`, `!`, `?`, `:` or `;` followed by a space; sentences left with no term are
 * joined to the next.
 */
export function sentenceTerms(text: string): string[][] {
  const sentences: string[][] = [];
  let sentence: string[] = [];
  // Words, and the marks that end a sentence, in one pass.
  for (const token of text.toLowerCase().match(/[\p{L}\p{N}]+|[.!?:;](?=\s)|\n/gu) ?? []) {
    if (token.length === 1 && SENTENCE_ENDS.has(token)) {
      if (sentence.length > 0) {
        sentences.push(sentence);
        sentence = [];
      }
      continue;
    }
    if (token.length <= 64 && !STOPWORDS.has(token)) sentence.push(stem(token));
  }
  if (sentence.length > 0) sentences.push(sentence);
  return sentences;
}

const SENTENCE_ENDS = new Set(['.', '!', '?', ':', ';', '\n']);

/**
 * The weighted terms of a question asked over `turns` (the caller's words, oldest first: the last
 * is the question, those before it its context, each older one at EARLIER_TURN_WEIGHT of the
 * next). Each term once, at the highest weight it has; at most MAX_QUERY_TERMS terms, newest turn
 * first. Empty when nothing is left.
 */
export function weightedQuery(turns: readonly string[]): QueryTerm[] {
  const weights = new Map<string, number>();
  const raise = (term: string, weight: number) => {
    if (weight > (weights.get(term) ?? 0)) weights.set(term, weight);
  };
  let weight = 1;
  for (let i = turns.length - 1; i >= 0 && weights.size < MAX_QUERY_TERMS; i--, weight *= EARLIER_TURN_WEIGHT) {
    for (const word of tokens(turns[i]!)) {
      if (word.length > 64 || STOPWORDS.has(word) || CONVERSATIONAL.has(word)) continue;
      raise(stem(word), weight);
      if (weights.size === MAX_QUERY_TERMS) break;
    }
  }
  return [...weights].map(([term, w]) => ({ term, weight: w }));
}
