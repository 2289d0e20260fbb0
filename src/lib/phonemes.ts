/**
 * English phonemes as CMU ARPAbet (the CMU Pronouncing Dictionary's 39 phones, vowels with a
 * stress digit), read from ARPAbet as people write it or from IPA. Retell's
 * `pronunciation_dictionary` gives either; the synthesisers here take ARPAbet (Flite's lexicon,
 * ElevenLabs' `cmu-arpabet` phoneme tags), so IPA is converted, sound by sound, to its nearest
 * General American ARPAbet phone.
 */

const VOWELS = ['AA', 'AE', 'AH', 'AO', 'AW', 'AY', 'EH', 'ER', 'EY', 'IH', 'IY', 'OW', 'OY', 'UH', 'UW'] as const;
const CONSONANTS = ['B', 'CH', 'D', 'DH', 'F', 'G', 'HH', 'JH', 'K', 'L', 'M', 'N', 'NG', 'P', 'R', 'S', 'SH', 'T', 'TH', 'V', 'W', 'Y', 'Z', 'ZH'] as const;
const VOWEL_SET: ReadonlySet<string> = new Set(VOWELS);
const CONSONANT_SET: ReadonlySet<string> = new Set(CONSONANTS);

/** IPA sounds, longest first where one is a prefix of another, and their ARPAbet phones. */
const IPA: ReadonlyArray<readonly [string, string]> = [
  ['t͡ʃ', 'CH'], ['tʃ', 'CH'], ['ʧ', 'CH'], ['d͡ʒ', 'JH'], ['dʒ', 'JH'], ['ʤ', 'JH'],
  ['eɪ', 'EY'], ['aɪ', 'AY'], ['ɑɪ', 'AY'], ['ɔɪ', 'OY'], ['oɪ', 'OY'], ['aʊ', 'AW'], ['ɑʊ', 'AW'], ['oʊ', 'OW'], ['əʊ', 'OW'],
  ['ɝ', 'ER'], ['ɚ', 'ER'], ['ɜr', 'ER'], ['ɜɹ', 'ER'], ['ər', 'ER'], ['əɹ', 'ER'], ['ɜ', 'ER'],
  ['i', 'IY'], ['ɪ', 'IH'], ['ᵻ', 'IH'], ['e', 'EH'], ['ɛ', 'EH'], ['æ', 'AE'], ['a', 'AA'], ['ɑ', 'AA'], ['ɒ', 'AA'],
  ['ɔ', 'AO'], ['o', 'OW'], ['ʊ', 'UH'], ['u', 'UW'], ['ʌ', 'AH'], ['ə', 'AH'], ['ɐ', 'AH'],
  ['p', 'P'], ['b', 'B'], ['t', 'T'], ['d', 'D'], ['k', 'K'], ['g', 'G'], ['ɡ', 'G'], ['f', 'F'], ['v', 'V'],
  ['θ', 'TH'], ['ð', 'DH'], ['s', 'S'], ['z', 'Z'], ['ʃ', 'SH'], ['ʒ', 'ZH'], ['h', 'HH'], ['m', 'M'], ['n', 'N'],
  ['ŋ', 'NG'], ['l', 'L'], ['ɫ', 'L'], ['r', 'R'], ['ɹ', 'R'], ['ɾ', 'T'], ['j', 'Y'], ['w', 'W'], ['x', 'K'],
];
/** Marks that change no phone: length, syllable breaks, aspiration, the glottal stop, brackets. */
const IGNORED = new Set(['ː', 'ˑ', '.', 'ʰ', 'ʔ', '/', '[', ']', ' ', '\u0329', '\u0361', '\u032F', '\u0303']);

/** Phones of one word, e.g. ['T', 'AH0', 'M', 'EY1', 'T', 'OW2']. */
export type Arpabet = readonly string[];

/**
 * Parses ARPAbet as the CMU dictionary writes it ("T AH0 M EY1 T OW2", any case, spaces between
 * phones). A vowel without a stress digit gets 0 (a word with no primary stress gets it on its
 * first vowel, here and in ipaToArpabet). Returns the phone that is not ARPAbet on failure.
 */
export function parseArpabet(text: string): { phones: Arpabet } | { unknown: string } {
  const phones: string[] = [];
  for (const token of text.trim().toUpperCase().split(/\s+/)) {
    const m = /^([A-Z]+)([012])?$/.exec(token);
    const base = m?.[1];
    if (!m || !base) return { unknown: token };
    if (VOWEL_SET.has(base)) phones.push(`${base}${m[2] ?? '0'}`);
    else if (CONSONANT_SET.has(base) && m[2] === undefined) phones.push(base);
    else return { unknown: token };
  }
  return phones.length > 0 ? { phones: stressed(phones) } : { unknown: text };
}

/**
 * Converts an IPA transcription of an English word to ARPAbet: `ˈ` puts primary stress (1) and
 * `ˌ` secondary stress (2) on the next vowel, other vowels get 0. Returns the first sound it has
 * no phone for on failure.
 */
export function ipaToArpabet(ipa: string): { phones: Arpabet } | { unknown: string } {
  const text = ipa.normalize('NFC');
  const phones: string[] = [];
  let stress: '1' | '2' | undefined;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === 'ˈ' || ch === "'") {
      stress = '1';
      i++;
      continue;
    }
    if (ch === 'ˌ' || ch === ',') {
      stress = '2';
      i++;
      continue;
    }
    if (IGNORED.has(ch)) {
      i++;
      continue;
    }
    const hit = IPA.find(([sound]) => text.startsWith(sound, i));
    if (!hit) return { unknown: String.fromCodePoint(text.codePointAt(i)!) };
    const [sound, phone] = hit;
    if (VOWEL_SET.has(phone)) {
      phones.push(`${phone}${stress ?? '0'}`);
      stress = undefined;
    } else phones.push(phone);
    i += sound.length;
  }
  return phones.length > 0 ? { phones: stressed(phones) } : { unknown: ipa };
}

/** A word written without any primary stress gets it on its first vowel (as a word said alone has). */
function stressed(phones: string[]): string[] {
  if (phones.some((p) => p.endsWith('1'))) return phones;
  const first = phones.findIndex((p) => /[02]$/.test(p));
  if (first >= 0) phones[first] = `${phones[first]!.slice(0, -1)}1`;
  return phones;
}

/** The phones of a dictionary entry in its alphabet; undefined for alphabets of other languages (pinyin, jyutping). */
export function entryPhones(alphabet: string, phoneme: string): { phones: Arpabet } | { unknown: string } | undefined {
  if (alphabet === 'cmu') return parseArpabet(phoneme);
  if (alphabet === 'ipa') return ipaToArpabet(phoneme);
  return undefined;
}
