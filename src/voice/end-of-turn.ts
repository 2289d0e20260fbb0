/**
 * Adaptive end of turn: how long a silence ends the user's turn, from what the user has said so
 * far (the streaming recogniser's interim hypothesis) and the agent's settings.
 *
 * No turn-detection model runs offline here: the maintained ones (LiveKit's turn detector in
 * `@livekit/agents-plugin-livekit`, Pipecat's smart-turn) download their ONNX model from
 * Hugging Face at run time and need onnxruntime, so this is a small rule set over the text
 * (docs/voice-pipeline.md, "End of turn").
 */

import { SPOKEN_DIGITS } from '../lib/spoken-digits.ts';

/** The end-of-turn settings of an agent (AgentSettings `responsiveness`, `end_of_turn_*_silence_ms`). */
export interface EndOfTurnSettings {
  /** 0..1: 1 answers as soon as a complete sentence is followed by the minimum silence. */
  responsiveness: number;
  /** Shortest silence that ends a turn, ms. */
  minSilenceMs: number;
  /** Longest silence before the turn ends whatever was said, ms. */
  maxSilenceMs: number;
}

/** What the text heard so far says of the turn: `unknown` when there is no text to judge. */
export type Completeness = 'complete' | 'incomplete' | 'unknown';

/** Words after which an English sentence goes on: conjunctions, prepositions, articles, fillers... */
const TRAILING = new Set([
  // conjunctions and relatives
  'and', 'or', 'but', 'so', 'because', 'cause', 'if', 'then', 'that', 'which', 'who', 'when', 'where', 'while', 'than', 'as',
  // prepositions
  'to', 'for', 'with', 'of', 'in', 'on', 'at', 'from', 'about', 'by', 'into', 'like', 'after', 'before', 'until',
  // articles, determiners, possessives
  'a', 'an', 'the', 'my', 'your', 'our', 'their', 'his', 'her', 'its', 'this', 'these', 'those', 'some', 'any', 'no', 'every',
  // fillers and hesitations
  'um', 'uh', 'er', 'erm', 'hmm', 'mm', 'ah', 'well',
  // subjects and auxiliaries that need a verb or an object after them
  'i', 'we', 'is', 'are', 'was', 'were', 'am', 'be', 'been', 'have', 'has', 'had', 'would', 'could', 'should', 'can', 'will',
  'do', 'does', 'did', 'want', 'need', 'get', 'just', 'also', 'very', 'really',
  // contracted subjects and auxiliaries
  "i'm", "i've", "i'd", "i'll", "we're", "we've", "we'd", "you're", "it's", "there's", "they're", "don't", "can't", "didn't",
]);

const DIGIT_WORDS = new Set(SPOKEN_DIGITS);
/** What recognisers write for a digit said in a run of digits ("nine for one", "due for six"). */
const DIGIT_HOMOPHONES = new Set(['for', 'to', 'too', 'due', 'won', 'ate']);

/**
 * Digits dictated so far at the end of `words` (single digits or digit strings, "five five 5"). The
 * run ends on a real digit; before it, homophones of digits count too.
 */
function trailingDigits(words: readonly string[]): number {
  let n = 0;
  for (let i = words.length - 1; i >= 0; i--) {
    const w = words[i] ?? '';
    if (DIGIT_WORDS.has(w)) n++;
    else if (/^\d+$/.test(w)) n += w.length;
    else if (n > 0 && DIGIT_HOMOPHONES.has(w)) n++;
    else break;
  }
  return n;
}

/**
 * Judges whether the text heard so far ends a sentence. Incomplete: it ends on a word that needs
 * more (TRAILING: "and", "to", "my", "um", "i'm"...), on a lone letter (spelling, or a fragment),
 * or on a number being dictated in groups (3 or 6 digits so far: "my number is five five five").
 * Anything else with text is complete.
 */
export function completeness(text: string): Completeness {
  const words = text.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
  const last = words.at(-1);
  if (last === undefined) return 'unknown';
  if (TRAILING.has(last)) return 'incomplete';
  // A lone letter: spelling in progress, or the recogniser's fragment of a word still being said.
  if (/^[b-hj-z]$/.test(last)) return 'incomplete';
  const digits = trailingDigits(words);
  if (digits === 3 || digits === 6) return 'incomplete';
  return 'complete';
}

/**
 * The silence that ends the turn, ms, for the text heard so far:
 * - complete: `min + (1 - responsiveness) * (max - min) / 2` (the minimum at responsiveness 1);
 * - unknown (a recogniser without interim hypotheses, or nothing heard yet):
 *   `min + (0.25 + (1 - responsiveness) / 2) * (max - min)` (about 490 ms with the defaults);
 * - incomplete: the maximum.
 */
export function endOfTurnSilenceMs(state: Completeness, s: EndOfTurnSettings): number {
  const r = Math.min(1, Math.max(0, s.responsiveness));
  const min = Math.max(0, s.minSilenceMs);
  const span = Math.max(0, s.maxSilenceMs - min);
  if (state === 'incomplete') return min + span;
  if (state === 'complete') return Math.round(min + ((1 - r) * span) / 2);
  return Math.round(min + (0.25 + (1 - r) / 2) * span);
}

/**
 * Silence after the speech a streaming recogniser must have decoded before its interim hypothesis
 * is judged complete or not, ms (adaptive end of turn).
 */
export const HYPOTHESIS_SETTLE_MS = 250;

/** One 20 ms frame, ms. */
const FRAME_MS = 20;

/** Why a silence ends the turn: the text's completeness, or `unsettled` (the recogniser has not yet decoded enough of the silence to judge it: the maximum). */
export type EndOfTurnReason = Completeness | 'unsettled';

/** One end-of-turn judgement: the silence that ends the turn now, ms, and why. */
export interface EndOfTurnJudgement {
  silenceMs: number;
  reason: EndOfTurnReason;
}

/**
 * The silence that ends the user's turn now: judged from the latest interim hypothesis
 * (`interim`), but only once the recogniser has decoded HYPOTHESIS_SETTLE_MS of the silence
 * (`pendingMs`, SttStream.pendingMs: undefined when the recogniser cannot tell). Before that the
 * hypothesis still misses the last word, which the recogniser commits only after some silence
 * ("i would like to order" for "...order a"), and only the maximum silence ends the turn.
 */
export function judgeEndOfTurn(eot: EndOfTurnSettings, silenceMs: number, pendingMs: number | undefined, interim: string): EndOfTurnJudgement {
  // The frame being judged is not written to the recogniser yet: it is not in `pendingMs`.
  const decodedSilenceMs = pendingMs === undefined ? silenceMs : silenceMs - FRAME_MS - pendingMs;
  if (pendingMs !== undefined && decodedSilenceMs < HYPOTHESIS_SETTLE_MS) return { silenceMs: Math.max(eot.minSilenceMs, eot.maxSilenceMs), reason: 'unsettled' };
  const state = completeness(interim);
  return { silenceMs: endOfTurnSilenceMs(state, eot), reason: state };
}

/** judgeEndOfTurn's silence alone, ms. */
export function turnEndSilenceMs(eot: EndOfTurnSettings, silenceMs: number, pendingMs: number | undefined, interim: string): number {
  return judgeEndOfTurn(eot, silenceMs, pendingMs, interim).silenceMs;
}
