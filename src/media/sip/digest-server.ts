/**
 * SIP digest authentication, the server's side (RFC 3261 22.4, RFC 8760 for SHA-256): inbound
 * INVITEs challenged with 401 and WWW-Authenticate (one SHA-256 and one MD5 challenge, qop=auth),
 * the retried INVITE's Authorization checked against the configured credentials. Nonces are
 * random, live NONCE_TTL_MS and are used once (a replayed answer is challenged again); the table
 * holds at most MAX_NONCES, the oldest dropped first.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** How long a nonce may be answered, ms. */
export const NONCE_TTL_MS = 30_000;
/** Nonces outstanding at once; past it the oldest is forgotten (its answer is challenged again). */
export const MAX_NONCES = 10_000;
const MAX_AUTHORIZATION_CHARS = 2_048;

export type DigestVerdict =
  /** The answer is right: the request goes on. */
  | { kind: 'ok' }
  /** No answer, or one to a nonce we do not hold (unknown, used, or expired: `stale`): challenge again. */
  | { kind: 'challenge'; stale: boolean }
  /** An answer to our nonce that is wrong (user name, realm or response): refuse (403). */
  | { kind: 'wrong' };

export class DigestVerifier {
  readonly #credentials: { username: string; password: string };
  readonly #realm: string;
  readonly #now: () => number;
  /** Nonce -> when it was issued (insertion order is age order). */
  readonly #nonces = new Map<string, number>();

  constructor(options: { credentials: { username: string; password: string }; realm: string; now?: () => number }) {
    this.#credentials = options.credentials;
    this.#realm = options.realm;
    this.#now = options.now ?? Date.now;
  }

  /** Nonces outstanding now. */
  get outstanding(): number {
    return this.#nonces.size;
  }

  /** The WWW-Authenticate values of a new challenge: SHA-256 first, then MD5 (RFC 8760 2.4). */
  challenge(stale = false): string[] {
    this.#sweep();
    while (this.#nonces.size >= MAX_NONCES) this.#nonces.delete(this.#nonces.keys().next().value as string);
    const nonce = randomBytes(16).toString('hex');
    this.#nonces.set(nonce, this.#now());
    const common = `realm="${this.#realm}", nonce="${nonce}", qop="auth"${stale ? ', stale=true' : ''}`;
    return [`Digest ${common}, algorithm=SHA-256`, `Digest ${common}, algorithm=MD5`];
  }

  /** Judges a request's Authorization value (undefined: none) for `method`. */
  verify(authorization: string | undefined, method: string): DigestVerdict {
    if (authorization === undefined || authorization.length > MAX_AUTHORIZATION_CHARS) return { kind: 'challenge', stale: false };
    const p = parseParams(authorization);
    if (!p) return { kind: 'challenge', stale: false };
    const nonce = p.get('nonce') ?? '';
    const issued = this.#nonces.get(nonce);
    if (issued === undefined) return { kind: 'challenge', stale: false };
    if (this.#now() - issued > NONCE_TTL_MS) {
      this.#nonces.delete(nonce);
      return { kind: 'challenge', stale: true };
    }
    const algorithm = (p.get('algorithm') ?? 'MD5').toUpperCase();
    const uri = p.get('uri');
    const qop = p.get('qop');
    if ((algorithm !== 'MD5' && algorithm !== 'SHA-256') || uri === undefined || p.get('realm') !== this.#realm) return { kind: 'wrong' };
    const hash = (value: string) => createHash(algorithm === 'SHA-256' ? 'sha256' : 'md5').update(value, 'utf8').digest('hex');
    const ha1 = hash(`${this.#credentials.username}:${this.#realm}:${this.#credentials.password}`);
    const ha2 = hash(`${method}:${uri}`);
    let expected: string;
    if (qop === undefined) expected = hash(`${ha1}:${nonce}:${ha2}`);
    else if (qop.toLowerCase() === 'auth' && p.has('nc') && p.has('cnonce')) expected = hash(`${ha1}:${nonce}:${p.get('nc')}:${p.get('cnonce')}:auth:${ha2}`);
    else return { kind: 'wrong' };
    const given = Buffer.from(p.get('response') ?? '', 'utf8');
    const right = Buffer.from(expected, 'utf8');
    const userRight = safeEqual(p.get('username') ?? '', this.#credentials.username);
    if (!userRight || given.length !== right.length || !timingSafeEqual(given, right)) return { kind: 'wrong' };
    // Used once: a replay of this answer is challenged afresh.
    this.#nonces.delete(nonce);
    return { kind: 'ok' };
  }

  #sweep(): void {
    const now = this.#now();
    for (const [nonce, issued] of this.#nonces) {
      if (now - issued <= NONCE_TTL_MS) break;
      this.#nonces.delete(nonce);
    }
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The parameters of a `Digest ...` credentials value (RFC 3261 25.1), or null when it is not one. */
function parseParams(value: string): Map<string, string> | null {
  const scheme = /^\s*Digest\s+/i.exec(value);
  if (!scheme) return null;
  const params = new Map<string, string>();
  const pattern = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*(?:,|$)/g;
  const rest = value.slice(scheme[0].length);
  for (let match = pattern.exec(rest); match; match = pattern.exec(rest)) {
    params.set((match[1] as string).toLowerCase(), match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : (match[3] as string));
  }
  return params;
}
