import { type KeyObject, createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../lib/clock.ts';

/** The path of a call's signed recording link (its query carries `expires` and `signature`). */
export function signedRecordingPath(callId: string): string {
  return `/v2/recording/${encodeURIComponent(callId)}`;
}

/** Whether a link's signature and expiry hold. */
export type RecordingLinkCheck = 'valid' | 'invalid' | 'expired';

/**
 * Signed, expiring recording links: `<PUBLIC_BASE_URL>/v2/recording/<call_id>?expires=<epoch ms>&signature=<HMAC-SHA256>`,
 * which play without an API key (an `<audio>` element, a webhook consumer). The key is a server
 * secret kept in the store (`recording_url_key`, apart from the access tokens' key), so every
 * server and every restart signs and checks alike. A link is made afresh each time a call is read.
 */
export class RecordingLinks {
  readonly #key: KeyObject;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #baseUrl: string;

  /** `ttlMs`: how long a link plays after it is made (RECORDING_URL_TTL_MS). */
  constructor(options: { secret: string; ttlMs: number; clock: Clock; publicBaseUrl: string }) {
    this.#key = createSecretKey(Buffer.from(options.secret, 'base64url'));
    this.#ttlMs = options.ttlMs;
    this.#clock = options.clock;
    this.#baseUrl = options.publicBaseUrl;
  }

  static generateSecret(): string {
    return randomBytes(32).toString('base64url');
  }

  /** A link to the call's recording, valid for the configured lifetime from now. */
  url(callId: string): string {
    const expires = this.#clock.now() + this.#ttlMs;
    return `${this.#baseUrl}${signedRecordingPath(callId)}?expires=${expires}&signature=${this.#mac(callId, expires)}`;
  }

  /** Checks a link's `expires` and `signature` query values for `callId`. */
  check(callId: string, expires: string | undefined, signature: string | undefined): RecordingLinkCheck {
    if (!expires || !signature || !/^\d{1,16}$/.test(expires) || signature.length > 64) return 'invalid';
    const expected = Buffer.from(this.#mac(callId, Number(expires)));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    return Number(expires) > this.#clock.now() ? 'valid' : 'expired';
  }

  #mac(callId: string, expires: number): string {
    return createHmac('sha256', this.#key).update(`recording\n${callId}\n${expires}`).digest('base64url');
  }
}
