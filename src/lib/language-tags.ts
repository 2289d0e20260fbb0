/**
 * BCP-47 language tags as the speech engines list what they take. A list entry is an exact tag
 * ('en-US'), a primary language subtag that takes every tag of that language ('fr' takes 'fr',
 * 'fr-FR' and 'fr-CA'), or '*' (any well-formed tag: the engine itself judges it). Tags compare
 * case-insensitively, as BCP-47 says they do.
 */

/** Any well-formed tag; the engine itself judges it. */
export const ANY_LANGUAGE = '*';

/** The primary language subtag of a tag, lower-case: 'fr-CA' gives 'fr'. */
export function primaryLanguage(tag: string): string {
  return (tag.split('-')[0] ?? tag).toLowerCase();
}

/** Whether `supported` (entries as described above) takes `tag`. */
export function languageSupported(tag: string, supported: readonly string[]): boolean {
  const wanted = tag.toLowerCase();
  const primary = primaryLanguage(tag);
  return supported.some((entry) => {
    if (entry === ANY_LANGUAGE) return true;
    const e = entry.toLowerCase();
    return e === wanted || (!e.includes('-') && e === primary);
  });
}
