import { type KeyObject, createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';

/** What an access token carries: the call it joins, which token of that call, and its expiry. */
export interface AccessTokenClaims {
  callId: string;
  tokenId: string;
  expiresAt: number;
}

/**
 * Web-call access tokens: `<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, signed with a server
 * secret kept in the store so every process and every restart agrees on it. A token names one
 * call; single use is enforced by the store (the call records when its token was used).
 */
export class AccessTokenSigner {
  readonly #key: KeyObject;

  constructor(secret: string) {
    this.#key = createSecretKey(Buffer.from(secret, 'base64url'));
  }

  static generateSecret(): string {
    return randomBytes(32).toString('base64url');
  }

  sign(claims: AccessTokenClaims): string {
    const payload = Buffer.from(JSON.stringify({ cid: claims.callId, tid: claims.tokenId, exp: claims.expiresAt })).toString(
      'base64url',
    );
    return `${payload}.${this.#mac(payload)}`;
  }

  /** The claims of a well-formed, authentic token (expiry is checked by the caller), or null. */
  verify(token: string): AccessTokenClaims | null {
    if (token.length > 1024) return null;
    const [payload, mac, extra] = token.split('.');
    if (!payload || !mac || extra !== undefined) return null;
    const expected = Buffer.from(this.#mac(payload));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
      if (typeof claims.cid !== 'string' || typeof claims.tid !== 'string' || typeof claims.exp !== 'number') return null;
      return { callId: claims.cid, tokenId: claims.tid, expiresAt: claims.exp };
    } catch {
      return null;
    }
  }

  #mac(payload: string): string {
    return createHmac('sha256', this.#key).update(payload).digest('base64url');
  }
}
