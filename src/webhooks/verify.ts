/**
 * Receiver-side verification of Switchboard webhook deliveries, with `node:crypto` only.
 * Exported by the Node client package: `import { verifyWebhook } from '@switchboard/node'` (bundled
 * into packages/node by scripts/build-packages.ts: one implementation).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Largest allowed distance between `webhook-timestamp` and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in epoch milliseconds (default Date.now()). */
  nowMs?: number;
}

export interface VerifiedWebhook {
  event: string;
  data: Record<string, unknown>;
  sent_at: string;
  /** `webhook-id`: the same on every attempt of one event; store it to drop duplicates. Null if absent. */
  id: string | null;
}

/**
 * Checks a delivery's signatures over the exact raw body and returns the parsed body; throws
 * WebhookVerificationError otherwise. When the Standard Webhooks headers are present, the
 * `webhook-signature` (HMAC-SHA256 of `id.timestamp.body`, keyed with the base64-decoded part of
 * the `whsec_` secret) and the timestamp's freshness are checked; `X-Service-Signature`
 * (`sha256=` + hex HMAC-SHA256 of the body, keyed with the whole secret string) is checked when
 * present. At least one of the two must be there. Comparisons are constant-time.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, options: VerifyOptions = {}): VerifiedWebhook {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const standard = header(headers, 'webhook-signature');
  const service = header(headers, 'x-service-signature');
  if (standard === null && service === null) throw new WebhookVerificationError('no webhook-signature or x-service-signature header');
  const id = header(headers, 'webhook-id');

  if (standard !== null) {
    const timestamp = header(headers, 'webhook-timestamp');
    if (id === null || timestamp === null || !/^\d{1,12}$/.test(timestamp)) {
      throw new WebhookVerificationError('webhook-id and a numeric webhook-timestamp must come with webhook-signature');
    }
    const tolerance = options.toleranceSeconds ?? 300;
    const now = Math.floor((options.nowMs ?? Date.now()) / 1000);
    if (Math.abs(now - Number(timestamp)) > tolerance) throw new WebhookVerificationError('webhook-timestamp is too old or in the future');
    const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
    // Several space-separated signatures may be sent (secret rotation); one valid v1 is enough.
    const ok = standard.split(' ').some((entry) => {
      const [version, signature] = entry.split(',', 2);
      return version === 'v1' && signature !== undefined && safeEqual(Buffer.from(signature, 'base64'), expected);
    });
    if (!ok) throw new WebhookVerificationError('webhook-signature does not match');
  }
  if (service !== null) {
    const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
    if (!safeEqual(Buffer.from(service), expected)) throw new WebhookVerificationError('x-service-signature does not match');
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  const payload = parsed as Partial<VerifiedWebhook>;
  if (typeof payload.event !== 'string' || typeof payload.sent_at !== 'string' || typeof payload.data !== 'object' || payload.data === null) {
    throw new WebhookVerificationError('the body is not {event, data, sent_at}');
  }
  return { event: payload.event, data: payload.data, sent_at: payload.sent_at, id };
}

function header(headers: HeaderBag, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const bag = headers as Record<string, string | string[] | undefined>;
  let value = bag[name];
  if (value === undefined) {
    const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : bag[key];
  }
  if (Array.isArray(value)) value = value[0];
  return value ?? null;
}

function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
