import type { EnvReader } from '../config/env-reader.ts';

/** `{ apiKey }` when the variable `name` is set, else `{}` (a key is never defaulted). */
export function apiKey(reader: EnvReader, name: string): { apiKey?: string } {
  const key = reader.optional(name);
  return key === null ? {} : { apiKey: key };
}

/**
 * The http(s) URL in variable `name`, which `why` requires (e.g. 'STT_PROVIDER=openai'): unset,
 * `${name} is required with ${why}` goes to `problems` and '' is returned.
 */
export function requiredUrl(reader: EnvReader, problems: string[], name: string, why: string): string {
  if (reader.optional(name) === null) {
    problems.push(`${name} is required with ${why}`);
    return '';
  }
  return reader.url(name, '');
}
