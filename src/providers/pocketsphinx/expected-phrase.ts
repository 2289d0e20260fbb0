// Expected phrases (SttStream.bias) against one utterance's recognition: whether the best path
// has one, which one the word lattice holds strongly enough, and the text with it in its place.
// Pure: the decoder thread (decoder.worker.ts) reads the lattice and the best path.

/** A word of the best path; frames (10 ms) from the utterance's start, both inclusive. */
export interface TimedWord {
  word: string;
  start: number;
  end: number;
}

/** An expected phrase found in the word lattice, with its posterior probability (0..1). */
export interface PhraseEvidence {
  phrase: string;
  start: number;
  end: number;
  posterior: number;
  /** The phrase's words where the lattice placed them (absent: only the whole phrase's frames are known). */
  words?: readonly TimedWord[];
}

/**
 * How probable an expected phrase must be in the utterance's word lattice (given the audio and the
 * language model) to be taken when the best path missed it: 1e-3, as if expecting the phrase made
 * it about a thousand times likelier. Chosen on 35 phrases outside the benchmark's corpus, spoken
 * by the benchmark's voices: from 1e-3 down to 1e-4 the same keywords were recovered on wideband
 * audio, and below that speech without a keyword took branches (of 270 such utterances, 15
 * took one at 1e-5, 4 at 1e-3, 1 without biasing).
 */
export const PHRASE_MIN_POSTERIOR = 1e-3;

function words(text: string): string[] {
  return text.toLowerCase().split(/\s+/).filter(Boolean);
}

/** Whole words, case-insensitive, as the flow's keyword edges match: does `text` hold one of `phrases`? */
export function containsPhrase(text: string, phrases: readonly string[]): boolean {
  const hay = ` ${words(text).join(' ')} `;
  return phrases.some((p) => {
    const needle = words(p).join(' ');
    return needle.length > 0 && hay.includes(` ${needle} `);
  });
}

/** The most probable evidence at or above `minPosterior`, if any. */
export function strongest(evidence: readonly PhraseEvidence[], minPosterior = PHRASE_MIN_POSTERIOR): PhraseEvidence | undefined {
  let best: PhraseEvidence | undefined;
  for (const e of evidence) if (e.posterior >= minPosterior && (!best || e.posterior > best.posterior)) best = e;
  return best;
}

/**
 * The best path's text with `found` in place of the words it covers (those with more than half of
 * their frames inside the phrase's), or inserted where it was spoken when it covers none.
 */
export function withPhrase(path: readonly TimedWord[], found: PhraseEvidence): string {
  return placed(path, found).map((w) => (w === PHRASE ? found.phrase : w.word)).join(' ');
}

/**
 * The words of withPhrase's text with their frames: the path's, and the phrase's own where the
 * lattice placed them; undefined when it did not (no times are made up for them).
 */
export function withPhraseWords(path: readonly TimedWord[], found: PhraseEvidence): TimedWord[] | undefined {
  const words = found.words;
  if (!words) return undefined;
  return placed(path, found).flatMap((w) => (w === PHRASE ? words : [w]));
}

/** Where the phrase goes among the path's words. */
const PHRASE = Symbol('phrase');

function placed(path: readonly TimedWord[], found: PhraseEvidence): Array<TimedWord | typeof PHRASE> {
  const out: Array<TimedWord | typeof PHRASE> = [];
  let done = false;
  for (const w of path) {
    const overlap = Math.min(w.end, found.end) - Math.max(w.start, found.start) + 1;
    const covered = 2 * overlap > w.end - w.start + 1;
    if (!done && (covered || w.start > found.end)) {
      out.push(PHRASE);
      done = true;
    }
    if (!covered) out.push(w);
  }
  if (!done) out.push(PHRASE);
  return out;
}
