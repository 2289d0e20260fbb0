import { SPOKEN_DIGITS } from '../../lib/spoken-digits.ts';
import type { DigitCount, ExpectedValue, SttExpectation } from '../../providers/stt.ts';
import { digitCount } from './extract.ts';
import type { FlowNode, VariableType } from './types.ts';

/**
 * What a caller is likely to say next, as phrases for recognition biasing
 * (ResponseEngine.expectedPhrases, SttStream.bias): lower-case words and short phrases, no
 * punctuation. Built from what the engines already know; never used to decide anything.
 */

/** Words that carry a value of each extract-variable type ('text' and 'name' have no fixed words). */
export const TYPE_PHRASES: Readonly<Record<VariableType, readonly string[]>> = {
  text: [],
  digits: SPOKEN_DIGITS,
  number: [...SPOKEN_DIGITS, 'ten', 'eleven', 'twelve', 'twenty', 'thirty', 'forty', 'fifty', 'hundred', 'thousand'],
  email: ['at', 'dot', 'com'],
  name: ['my name is'],
  yes_no: ['yes', 'yeah', 'no', 'nope', 'correct'],
};

/** At most this many phrases are handed on: recognisers limit (Deepgram) or slow down with more. */
export const MAX_EXPECTED_PHRASES = 100;

/** Lower-case, letters, digits, apostrophes and single spaces only; '' when nothing is left. */
export function normalizePhrase(phrase: string): string {
  return phrase.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * Names among call variables: the values of variables whose name says they hold a name
 * (`name`, `first_name`, `customer_name`, ...), each word a phrase and the whole value one too.
 */
export function namesFromVariables(variables: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(variables)) {
    if (!/(^|_)name$/i.test(key)) continue;
    const v = normalizePhrase(value);
    if (!v || v.length > 60) continue;
    out.push(v, ...v.split(' '));
  }
  return out;
}

/** The phrases a flow node expects: its keyword edges' keywords and its extract variables' words. */
export function nodePhrases(node: FlowNode): string[] {
  const out: string[] = [];
  for (const edge of node.edges ?? []) {
    const c = edge.transition_condition;
    if (c.type === 'keyword') out.push(...c.keywords);
  }
  for (const v of node.extract_variables ?? []) out.push(...TYPE_PHRASES[v.type]);
  return out;
}

/** Normalized, de-duplicated, in order of first appearance, at most MAX_EXPECTED_PHRASES. */
export function mergePhrases(...lists: ReadonlyArray<readonly string[]>): string[] {
  const seen = new Set<string>();
  for (const list of lists) {
    for (const p of list) {
      const n = normalizePhrase(p);
      if (n) seen.add(n);
      if (seen.size >= MAX_EXPECTED_PHRASES) return [...seen];
    }
  }
  return [...seen];
}

/** Extract-variable types whose values are a closed set of words (directed recognition). */
const CLOSED_TYPES: ReadonlySet<VariableType> = new Set<ExpectedValue>(['yes_no', 'digits', 'number']);

/**
 * What a flow node expects (SttStream.expect): closed when the node acts only on a closed set of
 * answers (its edges, the else edge aside, are keyword edges, and the values it extracts are
 * yes/no, digits or a number) and expects at least one; open otherwise (a prompt or equation
 * edge, a free-text value, nothing to branch on, a knowledge node's question). Anything outside a closed set still reaches
 * the node and takes its else edge: the recogniser reports it as heard. With the digit count its
 * digits variables state (expectedDigitCount), closed or not.
 */
export function nodeExpectation(node: FlowNode): SttExpectation {
  const edges = (node.edges ?? []).map((e) => e.transition_condition.type).filter((t) => t !== 'always');
  const types = (node.extract_variables ?? []).map((v) => v.type);
  const values = [...new Set(types.filter((t): t is ExpectedValue => CLOSED_TYPES.has(t)))];
  // A knowledge node answers any question: never closed.
  const closed = node.type !== 'knowledge' && edges.every((t) => t === 'keyword') && types.every((t) => CLOSED_TYPES.has(t)) && edges.length + types.length > 0;
  // Stated whether or not the node is closed: a keyed turn ends at its most digits either way.
  const count = expectedDigitCount(node);
  return { closed, phrases: mergePhrases(nodePhrases(node)), values: closed ? values : [], ...(count ? { digitCount: count } : {}) };
}

/**
 * How many digits a node's digit string has: from the fewest to the most its digits variables
 * state, when every one states them and the node extracts no number (a number's words are not
 * counted as digits); undefined otherwise.
 */
function expectedDigitCount(node: FlowNode): DigitCount | undefined {
  const variables = node.extract_variables ?? [];
  const digits = variables.filter((v) => v.type === 'digits');
  const counts = digits.map(digitCount);
  if (digits.length === 0 || variables.some((v) => v.type === 'number') || !counts.every((c): c is DigitCount => c !== undefined)) return undefined;
  return { min: Math.min(...counts.map((c) => c.min)), max: Math.max(...counts.map((c) => c.max)) };
}
