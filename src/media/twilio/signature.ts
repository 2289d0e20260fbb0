/**
 * `X-Twilio-Signature` (twilio.com/docs/usage/security): Twilio signs each request to a webhook
 * with HMAC-SHA1, keyed by the account's auth token, over the full URL it requested followed by
 * every POST parameter sorted by name, each as name + value (a repeated name: each distinct value,
 * sorted), base64. We check it on the voice webhook and the status callbacks, and sign the same
 * way where we act as Twilio in tests.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** POST parameters as parsed from an `application/x-www-form-urlencoded` body: repeated names keep every value. */
export type FormParams = Readonly<Record<string, string | readonly string[]>>;

/** The signature Twilio sends for a request to `url` with `params`. */
export function twilioSignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    const values = typeof value === 'string' ? [value] : [...new Set(value)].sort();
    for (const v of values) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * True when `signature` is Twilio's for `url` and `params`. The URL is tried as given and with
 * its default port added or removed: Twilio signs the URL as configured, and a proxy may show it
 * either way (the official helpers do the same).
 */
export function verifyTwilioSignature(authToken: string, signature: string | undefined, url: string, params: FormParams): boolean {
  if (!signature || signature.length > 128) return false;
  const given = Buffer.from(signature);
  return urlVariants(url).some((candidate) => {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

/** `url`, without its port when it is the scheme's default, and with the default port when it has none. */
function urlVariants(url: string): string[] {
  const match = /^(https?:\/\/)([^/?#:]+)(:\d+)?(.*)$/i.exec(url);
  if (!match) return [url];
  const [, scheme, host, port, rest] = match as unknown as [string, string, string, string | undefined, string];
  const defaultPort = scheme.toLowerCase() === 'https://' ? ':443' : ':80';
  const variants = new Set([url, scheme + host + rest]);
  if (!port) variants.add(scheme + host + defaultPort + rest);
  return [...variants];
}

/** Parses a form body (`application/x-www-form-urlencoded`) into FormParams. */
export function parseFormBody(body: string): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const seen = params[name];
    if (seen === undefined) params[name] = value;
    else if (typeof seen === 'string') params[name] = [seen, value];
    else seen.push(value);
  }
  return params;
}
