/**
 * The agent's `voice_speed` and `pronunciation_dictionary` as Flite takes them, per synthesis:
 * a speed is Flite's `duration_stretch` feature (its own phone durations scaled, so the pitch is
 * kept), a dictionary is a lexicon addenda file (`-add_lex`) of ARPAbet phones.
 */
import { entryPhones } from '../../lib/phonemes.ts';
import type { TtsOptions } from '../tts.ts';

/** What one Flite run is given beyond its voice and text (the worker's job fields). */
export interface FliteJobOptions {
  lexicon?: string;
  durationStretch?: number;
}

/** A headword Flite's tokenizer hands to the lexicon whole: one word, no quotes or spaces. */
const ONE_WORD = /^[\p{L}\p{N}][\p{L}\p{N}'-]*$/u;

export function fliteJobOptions(options: Pick<TtsOptions, 'speed' | 'pronunciations'>): FliteJobOptions {
  const job: FliteJobOptions = {};
  if (options.speed !== undefined && options.speed !== 1) job.durationStretch = Number((1 / options.speed).toFixed(4));
  const lexicon = fliteLexicon(options.pronunciations ?? []);
  if (lexicon) job.lexicon = lexicon;
  return job;
}

/**
 * Flite's addenda lines (`word : phone phone ...`, lower case) for the entries it can say: IPA is
 * converted to ARPAbet (lib/phonemes.ts); Flite's US lexicon has no secondary stress, so 2 is said
 * as 0. Entries of several words, or in alphabets of other languages, are left out.
 */
export function fliteLexicon(entries: TtsOptions['pronunciations'] & object): string {
  const lines: string[] = [];
  for (const e of entries) {
    const word = e.word.trim().toLowerCase();
    if (!ONE_WORD.test(word)) continue;
    const parsed = entryPhones(e.alphabet, e.phoneme);
    if (!parsed || !('phones' in parsed)) continue;
    lines.push(`"${word}" : ${parsed.phones.map((p) => p.replace(/2$/, '0').toLowerCase()).join(' ')}`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
