/**
 * Martin Porter's stemming algorithm (1980, "An algorithm for suffix stripping", with the two
 * changes of his own later reference implementation: `bli` -> `ble` and `logi` -> `log` in step 2),
 * the stemmer SQLite's FTS5 `porter` tokenizer applies. Retrieval stems the words of chunks and
 * queries with it, so "crashes", "crashed" and "crashing" are one term on every store.
 * Input: one lower-case word of letters a-z; anything else is returned unchanged.
 */

const STEP2: ReadonlyArray<readonly [string, string]> = [
  ['ational', 'ate'], ['tional', 'tion'], ['enci', 'ence'], ['anci', 'ance'], ['izer', 'ize'], ['bli', 'ble'],
  ['alli', 'al'], ['entli', 'ent'], ['eli', 'e'], ['ousli', 'ous'], ['ization', 'ize'], ['ation', 'ate'],
  ['ator', 'ate'], ['alism', 'al'], ['iveness', 'ive'], ['fulness', 'ful'], ['ousness', 'ous'], ['aliti', 'al'],
  ['iviti', 'ive'], ['biliti', 'ble'], ['logi', 'log'],
];
const STEP3: ReadonlyArray<readonly [string, string]> = [
  ['icate', 'ic'], ['ative', ''], ['alize', 'al'], ['iciti', 'ic'], ['ical', 'ic'], ['ful', ''], ['ness', ''],
];
const STEP4 = ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize'];

/** Whether w[i] is a consonant: not a vowel, and a `y` only when it follows a vowel (or starts the word). */
function consonant(w: string, i: number): boolean {
  const c = w[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
  if (c === 'y') return i === 0 || !consonant(w, i - 1);
  return true;
}

/** m, the number of vowel-consonant sequences in `s` ([C](VC)^m[V]). */
function measure(s: string): number {
  let m = 0;
  let i = 0;
  while (i < s.length && consonant(s, i)) i++;
  while (i < s.length) {
    while (i < s.length && !consonant(s, i)) i++;
    if (i >= s.length) break;
    while (i < s.length && consonant(s, i)) i++;
    m++;
  }
  return m;
}

function hasVowel(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (!consonant(s, i)) return true;
  return false;
}

/** *d: ends in a double consonant. */
function doubleConsonant(s: string): boolean {
  const n = s.length;
  return n >= 2 && s[n - 1] === s[n - 2] && consonant(s, n - 1);
}

/** *o: ends consonant-vowel-consonant, the last not w, x or y. */
function cvc(s: string): boolean {
  const n = s.length;
  if (n < 3 || !consonant(s, n - 1) || consonant(s, n - 2) || !consonant(s, n - 3)) return false;
  const last = s[n - 1];
  return last !== 'w' && last !== 'x' && last !== 'y';
}

/** Replaces the first of `rules` whose suffix `w` ends with, when the stem before it has m > `minMeasure`. */
function replaceSuffix(w: string, rules: ReadonlyArray<readonly [string, string]>, minMeasure: number): string {
  for (const [suffix, replacement] of rules) {
    if (!w.endsWith(suffix)) continue;
    const stem = w.slice(0, -suffix.length);
    return measure(stem) > minMeasure ? stem + replacement : w;
  }
  return w;
}

/** The Porter stem of `word` (lower case, a-z). Words of one or two letters are their own stem. */
export function porterStem(word: string): string {
  if (word.length <= 2 || !/^[a-z]+$/.test(word)) return word;
  let w = word;

  // Step 1a: plurals.
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (!w.endsWith('ss') && w.endsWith('s')) w = w.slice(0, -1);

  // Step 1b: -eed, -ed, -ing.
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else {
    const suffix = w.endsWith('ed') ? 'ed' : w.endsWith('ing') ? 'ing' : '';
    if (suffix && hasVowel(w.slice(0, -suffix.length))) {
      w = w.slice(0, -suffix.length);
      if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
      else if (doubleConsonant(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1);
      else if (measure(w) === 1 && cvc(w)) w += 'e';
    }
  }

  // Step 1c: y -> i after a vowel in the stem.
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = `${w.slice(0, -1)}i`;

  // Steps 2 and 3: double and single suffixes, m > 0.
  w = replaceSuffix(w, STEP2, 0);
  w = replaceSuffix(w, STEP3, 0);

  // Step 4: suffixes removed when m > 1 (-ion only after s or t).
  for (const suffix of STEP4) {
    if (!w.endsWith(suffix)) continue;
    const stem = w.slice(0, -suffix.length);
    if (measure(stem) > 1 && (suffix !== 'ion' || /[st]$/.test(stem))) w = stem;
    break;
  }

  // Step 5a: a final e; 5b: a final double l.
  if (w.endsWith('e')) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !cvc(stem))) w = stem;
  }
  if (w.endsWith('ll') && measure(w) > 1) w = w.slice(0, -1);
  return w;
}
