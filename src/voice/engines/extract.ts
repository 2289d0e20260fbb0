import type { DigitCount } from '../../providers/stt.ts';
import type { ExtractVariable, VariableType } from './types.ts';

/**
 * Embedded extraction of typed values from the user's words, no LLM needed. Recognisers emit
 * words ("five five five one two three four"), so digits, numbers and e-mail addresses are
 * rebuilt from spoken forms as well as from written ones.
 */

const DIGIT_WORDS: Record<string, string> = {
  zero: '0', oh: '0', o: '0', nought: '0', one: '1', two: '2', to: '2', too: '2', three: '3', four: '4', for: '4',
  five: '5', six: '6', seven: '7', eight: '8', nine: '9',
};
const SMALL: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18,
  nineteen: 19, twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90,
};
const SCALES: Record<string, number> = { hundred: 100, thousand: 1000, million: 1_000_000 };

/** Lower-cased words without punctuation (keeps digits, @ and dots inside tokens). */
export function words(text: string): string[] {
  return text.toLowerCase().replace(/[^a-z0-9@.'\s-]/g, ' ').replace(/-/g, ' ').split(/\s+/).filter(Boolean);
}

/**
 * How many digits a digits variable's value has: its min_digits (default 1) to max_digits
 * (default unbounded); undefined when it states neither.
 */
export function digitCount(variable: ExtractVariable): DigitCount | undefined {
  if (variable.min_digits === undefined && variable.max_digits === undefined) return undefined;
  return { min: variable.min_digits ?? 1, max: variable.max_digits ?? Number.POSITIVE_INFINITY };
}

/** Unbounded: a run of 2+ digits, however long (a lone digit word is too often just a word). */
const ANY_DIGITS: DigitCount = { min: 2, max: Number.POSITIVE_INFINITY };

/**
 * The longest run of spoken or written digits: "five five five one two three four" -> "5551234",
 * "double five" -> "55", "555-1234" -> "5551234". Ambiguous homophones ("to", "for") count only
 * inside a run of at least two other digits. Only runs of `bounds.min` to `bounds.max` digits
 * count (default 2 or more): a node that expects one digit takes "five", never "to" or "oh" alone.
 * Returns '' when there is none.
 */
export function extractDigits(text: string, bounds: DigitCount = ANY_DIGITS): string {
  const tokens = words(text.replace(/(\d)[\s-]+(?=\d)/g, '$1'));
  let best = '';
  let run = '';
  let strong = 0;
  let repeat = 1;
  const close = (): void => {
    const fits = run.length >= bounds.min && run.length <= bounds.max;
    if (fits && strong >= Math.min(2, bounds.min) && run.length > best.length) best = run;
    run = '';
    strong = 0;
  };
  for (const t of tokens) {
    if (t === 'double' || t === 'triple') {
      repeat = t === 'double' ? 2 : 3;
      continue;
    }
    const written = /^\d+$/.test(t) ? t : undefined;
    const spoken = DIGIT_WORDS[t];
    // A lone "oh" is a hesitation more often than a zero: where one digit is expected, not a digit.
    const homophone = t === 'to' || t === 'too' || t === 'for' || t === 'o' || (t === 'oh' && bounds.max < 2);
    if (written !== undefined) {
      run += written;
      strong += written.length;
    } else if (spoken !== undefined && (!homophone || run.length > 0)) {
      run += spoken.repeat(repeat);
      if (!homophone) strong += repeat;
    } else {
      close();
    }
    repeat = 1;
  }
  close();
  return best;
}

/** A number spoken or written: "twenty three" -> 23, "one hundred and five" -> 105, "42" -> 42. */
export function extractNumber(text: string): number | undefined {
  const written = /-?\d+(?:\.\d+)?/.exec(text.replace(/,(?=\d{3})/g, ''));
  if (written) return Number(written[0]);
  let total = 0;
  let current = 0;
  let seen = false;
  for (const t of words(text)) {
    if (t === 'and' && seen) continue;
    const small = SMALL[t];
    const scale = SCALES[t];
    if (small !== undefined) {
      current += small;
      seen = true;
    } else if (scale !== undefined && seen) {
      if (scale === 100) current *= 100;
      else {
        total += current * scale;
        current = 0;
      }
    } else if (seen) break;
  }
  return seen ? total + current : undefined;
}

/** An e-mail address, written or spoken ("john dot smith at example dot com"). */
export function extractEmail(text: string): string | undefined {
  const written = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/.exec(text);
  if (written) return written[0].toLowerCase();
  const t = ` ${words(text).join(' ')} `
    .replace(/ at sign | at /g, '@')
    .replace(/ dot /g, '.')
    .replace(/ underscore /g, '_')
    .replace(/ dash | hyphen /g, '-');
  const spoken = /([a-z0-9._-]+(?: [a-z0-9._-]+)*)@([a-z0-9-]+(?:\.[a-z0-9-]+)+)/.exec(t);
  if (!spoken) return undefined;
  // Only the word right before "at" is taken: "it is john at ..." must not become "itisjohn@".
  const local = (spoken[1] ?? '').split(' ').at(-1) ?? '';
  return `${local}@${spoken[2]}`;
}

const NAME_INTRO = /\b(?:my name is|my name's|name is|i am|i'm|this is|it's|call me|name's)\s+([a-z][a-z'-]*(?:\s+[a-z][a-z'-]*)?)/i;
const NOT_NAMES = new Set(['a', 'an', 'the', 'calling', 'looking', 'interested', 'here', 'fine', 'good', 'not', 'just', 'trying', 'going', 'so', 'very', 'really', 'well', 'okay', 'sorry', 'and', 'uh', 'um']);
const STOP_AFTER_NAME = new Set(['and', 'i', 'my', 'from', 'calling', 'please', 'thanks', 'thank', 'the', 'a', 'with', 'at', 'number', 'phone', 'speaking', 'here']);

/**
 * A person's name: after "my name is / I'm / this is / call me", else the whole answer when it is
 * one or two words. Returned in Title Case ("john smith" -> "John Smith").
 */
export function extractName(text: string): string | undefined {
  const m = NAME_INTRO.exec(text);
  let candidate: string[] = [];
  if (m?.[1]) {
    candidate = words(m[1]).filter((w) => !/\d/.test(w));
    const stop = candidate.findIndex((w, i) => i > 0 && STOP_AFTER_NAME.has(w));
    if (stop > 0) candidate = candidate.slice(0, stop);
    if (candidate[0] && NOT_NAMES.has(candidate[0])) candidate = [];
  } else {
    const ws = words(text).filter((w) => !['its', "it's", 'uh', 'um', 'yes', 'yeah'].includes(w));
    if (ws.length >= 1 && ws.length <= 2 && ws.every((w) => /^[a-z][a-z'-]*$/.test(w) && !NOT_NAMES.has(w))) candidate = ws;
  }
  if (candidate.length === 0) return undefined;
  return candidate.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}

const YES = new Set(['yes', 'yeah', 'yep', 'yup', 'sure', 'correct', 'right', 'absolutely', 'definitely', 'ok', 'okay', 'affirmative', 'certainly', 'please']);
const NO = new Set(['no', 'nope', 'nah', 'not', "don't", 'dont', 'never', 'negative', 'wrong', 'incorrect']);

/** 'yes' / 'no' from the first decisive word, or undefined. */
export function extractYesNo(text: string): 'yes' | 'no' | undefined {
  for (const w of words(text)) {
    if (NO.has(w)) return 'no';
    if (YES.has(w)) return 'yes';
  }
  return undefined;
}

/**
 * Extracts one variable of the given type; undefined when the words do not contain one. `bounds`:
 * a digits variable's length (min_digits, max_digits); the others ignore it.
 */
export function extractVariable(type: VariableType, text: string, bounds?: DigitCount): string | undefined {
  switch (type) {
    case 'text': {
      const t = text.trim();
      return t || undefined;
    }
    case 'digits': {
      const d = extractDigits(text, bounds);
      return d || undefined;
    }
    case 'number': {
      const n = extractNumber(text);
      return n === undefined ? undefined : String(n);
    }
    case 'email':
      return extractEmail(text);
    case 'name':
      return extractName(text);
    case 'yes_no':
      return extractYesNo(text);
  }
}
