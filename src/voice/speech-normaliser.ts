/**
 * The agent's `normalize_for_speech` (Retell's field): text written for reading becomes text to
 * say before it reaches the synthesiser, in English. Currencies ("$12.50" → "twelve dollars and
 * fifty cents"), percentages, times ("3:30 pm" → "three thirty p m"), ISO and US dates
 * ("2026-11-26", "11/26/2026" → "November twenty-sixth, twenty twenty-six"), ordinals ("21st"),
 * grouped and decimal numbers, and long digit runs (phone numbers, codes: digit by digit). The
 * transcript keeps the text as written; only what is spoken changes.
 */

const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES: Array<[number, string]> = [
  [1e12, 'trillion'],
  [1e9, 'billion'],
  [1e6, 'million'],
  [1e3, 'thousand'],
];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
};
/** Above this, a whole number is read digit by digit (it is an id or a phone number, not a quantity). */
const LARGEST_QUANTITY = 999_999_999_999_999;

/** A whole number 0 ≤ n ≤ LARGEST_QUANTITY in words: 1234 → "one thousand two hundred thirty-four". */
export function numberToWords(n: number): string {
  if (n < 20) return ONES[n]!;
  if (n < 100) return TENS[Math.floor(n / 10)]! + (n % 10 ? `-${ONES[n % 10]}` : '');
  if (n < 1000) return `${ONES[Math.floor(n / 100)]} hundred${n % 100 ? ` ${numberToWords(n % 100)}` : ''}`;
  for (const [size, name] of SCALES) {
    if (n >= size) {
      const rest = n % size;
      return `${numberToWords(Math.floor(n / size))} ${name}${rest ? ` ${numberToWords(rest)}` : ''}`;
    }
  }
  return String(n);
}

/** 1 → "first", 22 → "twenty-second". */
export function ordinalToWords(n: number): string {
  const words = numberToWords(n);
  const irregular: Record<string, string> = { one: 'first', two: 'second', three: 'third', five: 'fifth', eight: 'eighth', nine: 'ninth', twelve: 'twelfth' };
  const match = /([a-z]+)$/.exec(words)!;
  const last = match[1]!;
  const ordinal = irregular[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return words.slice(0, match.index) + ordinal;
}

/** A year as said: 2026 → "twenty twenty-six", 2000 → "two thousand", 1905 → "nineteen oh five". */
function yearToWords(year: number): string {
  if (year >= 2000 && year < 2010) return numberToWords(year);
  const high = Math.floor(year / 100);
  const low = year % 100;
  if (low === 0) return `${numberToWords(high)} hundred`;
  return `${numberToWords(high)} ${low < 10 ? `oh ${ONES[low]}` : numberToWords(low)}`;
}

function dateToWords(year: number, month: number, day: number): string | null {
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  return `${MONTHS[month - 1]} ${ordinalToWords(day)}, ${yearToWords(year)}`;
}

function digits(run: string): string {
  return [...run].map((d) => ONES[Number(d)]).join(' ');
}

/** A number as written ("1,234", "3.50", "0.5") in words; null when it is not one. */
function decimalToWords(written: string): string | null {
  const plain = written.replace(/,/g, '');
  const [whole = '', fraction] = plain.split('.');
  const n = Number(whole);
  if (!Number.isSafeInteger(n) || n > LARGEST_QUANTITY) return null;
  return fraction === undefined ? numberToWords(n) : `${numberToWords(n)} point ${digits(fraction)}`;
}

function currencyToWords(symbol: string, written: string): string | null {
  const units = CURRENCIES[symbol];
  if (!units) return null;
  const [whole = '', fraction] = written.replace(/,/g, '').split('.');
  const major = Number(whole);
  if (!Number.isSafeInteger(major) || major > LARGEST_QUANTITY) return null;
  const minor = fraction === undefined ? 0 : Number(fraction.padEnd(2, '0').slice(0, 2));
  const majorWords = `${numberToWords(major)} ${major === 1 ? units[0] : units[1]}`;
  if (minor === 0) return majorWords;
  const minorWords = `${numberToWords(minor)} ${minor === 1 ? units[2] : units[3]}`;
  return major === 0 ? minorWords : `${majorWords} and ${minorWords}`;
}

function timeToWords(hours: number, minutes: number, meridiem: string | undefined): string | null {
  if (hours > 23 || minutes > 59 || (meridiem && (hours < 1 || hours > 12))) return null;
  const suffix = meridiem ? ` ${meridiem.toLowerCase().replace(/\./g, '').split('').join(' ')}` : '';
  const hour = numberToWords(hours);
  if (minutes === 0) return meridiem ? `${hour}${suffix}` : `${hour} o'clock`;
  return `${hour} ${minutes < 10 ? `oh ${ONES[minutes]}` : numberToWords(minutes)}${suffix}`;
}

/** `text` with its numbers, currencies, dates and times written as words (English). */
export function normaliseForSpeech(text: string): string {
  return (
    text
      // ISO dates, then US dates (month/day/year).
      .replace(/\b(\d{4})-(\d{2})-(\d{2})\b/g, (m, y: string, mo: string, d: string) => dateToWords(Number(y), Number(mo), Number(d)) ?? m)
      .replace(/\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/g, (m, mo: string, d: string, y: string) => dateToWords(Number(y), Number(mo), Number(d)) ?? m)
      // Times: 3:30, 10:05 pm, 7:00 a.m.
      .replace(/\b(\d{1,2}):(\d{2})(?:\s*([ap]m|[ap]\.m\.)(?![a-z]))?/gi, (m, h: string, mi: string, ap: string | undefined) => timeToWords(Number(h), Number(mi), ap) ?? m)
      // Currencies: $12.50, €3, £1,200.
      .replace(/([$€£])(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?\b/g, (m, symbol: string, whole: string, fraction: string | undefined) => currencyToWords(symbol, whole + (fraction ?? '')) ?? m)
      // Percentages, ordinals.
      .replace(/\b(\d+(?:\.\d+)?)%/g, (m, n: string) => {
        const words = decimalToWords(n);
        return words ? `${words} percent` : m;
      })
      .replace(/\b(\d+)(st|nd|rd|th)\b/gi, (m, n: string) => (Number(n) <= LARGEST_QUANTITY ? ordinalToWords(Number(n)) : m))
      // Long digit runs (phone numbers, codes) digit by digit; then the remaining numbers.
      .replace(/\b\d{7,}\b/g, (run) => digits(run))
      .replace(/\b(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\b/g, (m, whole: string, fraction: string | undefined) => decimalToWords(whole + (fraction ?? '')) ?? m)
  );
}
