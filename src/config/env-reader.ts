/** The environment as read: variable name to value; unset variables are undefined. */
export type Env = Record<string, string | undefined>;

/** Reads typed values from the environment, collecting every problem instead of stopping at the first. */
export class EnvReader {
  readonly #env: Env;
  readonly #problems: string[];
  constructor(env: Env, problems: string[]) {
    this.#env = env;
    this.#problems = problems;
  }

  optional(name: string): string | null {
    const value = this.#env[name];
    return value === undefined || value === '' ? null : value;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === null) return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.#problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.optional(name);
    if (raw === null) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    this.#problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.optional(name);
    if (raw === null) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.#problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return fallback;
  }

  url(name: string, fallback: string): string {
    const raw = this.optional(name);
    if (raw === null) return fallback;
    try {
      const url = new URL(raw);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
      return raw.replace(/\/+$/, '');
    } catch {
      this.#problems.push(`${name} must be an absolute http(s) URL (got "${raw}")`);
      return fallback;
    }
  }

  /**
   * The same environment with `${scope}X` read as `${prefix}X` (and `${prefix}X` itself unset), its
   * problems going to `problems`: a provider configured a second time reads its own variables
   * through it (TTS_CARTESIA_API_KEY as TTS_API_KEY).
   */
  scoped(prefix: string, scope: string, problems: string[]): EnvReader {
    const env: Env = {};
    for (const [name, value] of Object.entries(this.#env)) {
      if (name.startsWith(scope)) env[`${prefix}${name.slice(scope.length)}`] = value;
      else if (!name.startsWith(prefix)) env[name] = value;
    }
    return new EnvReader(env, problems);
  }

  list(name: string): string[] {
    const raw = this.optional(name);
    if (raw === null) return [];
    return raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0);
  }
}
