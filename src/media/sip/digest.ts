/**
 * SIP digest authentication, the client's side (RFC 3261 22.2 and 22.3, with RFC 8760's SHA-256
 * and RFC 7616's computation): a trunk answers our INVITE 401 (WWW-Authenticate) or 407
 * (Proxy-Authenticate); we answer its challenge with Authorization or Proxy-Authorization.
 * MD5 and SHA-256, with qop=auth or without qop (RFC 2069 style); auth-int and the -sess
 * variants are not offered by the trunks we connect to and are refused.
 */
import { createHash, randomBytes } from 'node:crypto';

/** A challenge's parameters that the answer needs. */
export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque: string | null;
  algorithm: 'MD5' | 'SHA-256';
  /** Whether the server asked for qop=auth (else the answer has no qop). */
  qopAuth: boolean;
}

const MAX_CHALLENGE_CHARS = 2_048;

/**
 * The challenge of one WWW-Authenticate or Proxy-Authenticate value, or null when it is not a
 * Digest challenge we can answer (unknown algorithm, only auth-int, no nonce).
 */
export function parseDigestChallenge(header: string): DigestChallenge | null {
  if (header.length > MAX_CHALLENGE_CHARS) return null;
  const scheme = /^\s*Digest\s+/i.exec(header);
  if (!scheme) return null;
  const params = new Map<string, string>();
  // name=value or name="quoted value" (RFC 3261 25.1 quoted-string, with \-escapes), comma-separated.
  const pattern = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*(?:,|$)/g;
  const rest = header.slice(scheme[0].length);
  for (let match = pattern.exec(rest); match; match = pattern.exec(rest)) {
    params.set((match[1] as string).toLowerCase(), match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : (match[3] as string));
  }
  const nonce = params.get('nonce');
  const realm = params.get('realm');
  if (!nonce || realm === undefined) return null;
  const algorithm = (params.get('algorithm') ?? 'MD5').toUpperCase();
  if (algorithm !== 'MD5' && algorithm !== 'SHA-256') return null;
  const qop = params.get('qop');
  const qops = qop === undefined ? [] : qop.split(',').map((q) => q.trim().toLowerCase());
  // A server that offers only auth-int is not answered: we do not hash bodies.
  if (qop !== undefined && !qops.includes('auth')) return null;
  return { realm, nonce, opaque: params.get('opaque') ?? null, algorithm, qopAuth: qops.includes('auth') };
}

/**
 * The best challenge among a response's values (RFC 8760 2.4: several, one per algorithm; the
 * strongest we support is taken), or null when none can be answered.
 */
export function pickDigestChallenge(headers: readonly string[]): DigestChallenge | null {
  const challenges = headers.map(parseDigestChallenge).filter((c): c is DigestChallenge => c !== null);
  return challenges.find((c) => c.algorithm === 'SHA-256') ?? challenges[0] ?? null;
}

/**
 * The Authorization (or Proxy-Authorization) value answering `challenge` for `method` on `uri`.
 * `cnonce` is random unless given (tests of the computation give it).
 */
export function digestAuthorization(
  challenge: DigestChallenge,
  credentials: { username: string; password: string },
  request: { method: string; uri: string },
  cnonce: string = randomBytes(12).toString('hex'),
): string {
  const hash = (value: string) => createHash(challenge.algorithm === 'SHA-256' ? 'sha256' : 'md5').update(value, 'utf8').digest('hex');
  const ha1 = hash(`${credentials.username}:${challenge.realm}:${credentials.password}`);
  const ha2 = hash(`${request.method}:${request.uri}`);
  // One answer per nonce: the nonce count is always 1.
  const nc = '00000001';
  const response = challenge.qopAuth ? hash(`${ha1}:${challenge.nonce}:${nc}:${cnonce}:auth:${ha2}`) : hash(`${ha1}:${challenge.nonce}:${ha2}`);
  const quote = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;
  const parts = [
    `username=${quote(credentials.username)}`,
    `realm=${quote(challenge.realm)}`,
    `nonce=${quote(challenge.nonce)}`,
    `uri=${quote(request.uri)}`,
    `response=${quote(response)}`,
    `algorithm=${challenge.algorithm}`,
    ...(challenge.qopAuth ? [`qop=auth`, `nc=${nc}`, `cnonce=${quote(cnonce)}`] : []),
    ...(challenge.opaque === null ? [] : [`opaque=${quote(challenge.opaque)}`]),
  ];
  return `Digest ${parts.join(', ')}`;
}
