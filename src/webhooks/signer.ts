import { createHmac } from 'node:crypto';
import { SECRET_PREFIX } from '../domain/webhook-secret.ts';

// The secret's format lives in the domain (services create secrets); re-exported for receivers' code.
export { SECRET_PREFIX, generateWebhookSecret } from '../domain/webhook-secret.ts';

/**
 * The bytes that key the Standard Webhooks signature: the base64-decoded part after `whsec_`
 * (what the `standardwebhooks` and `svix` libraries use).
 */
export function standardKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/**
 * `X-Service-Signature`: `sha256=` + lowercase hex HMAC-SHA256 of the exact body bytes, keyed
 * with the whole secret string as UTF-8 (`whsec_` included), as the spec and GitHub do.
 */
export function serviceSignature(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed with `standardKeyBytes`. */
export function standardSignature(secret: string, id: string, timestampSeconds: number, body: string | Buffer): string {
  const mac = createHmac('sha256', standardKeyBytes(secret));
  mac.update(`${id}.${timestampSeconds}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/**
 * The delivery body `{event, data, sent_at}`, built around the stored JSON text of `data` so the
 * event's data is sent exactly as recorded.
 */
export function deliveryBody(kind: string, dataJson: string, sentAtMs: number): string {
  return `{"event":${JSON.stringify(kind)},"data":${dataJson},"sent_at":"${new Date(sentAtMs).toISOString()}"}`;
}

/**
 * Retell's agent-level body `{"event", "call"}` (issue 26), around the stored JSON text of the call
 * as `deliveryBody` does.
 */
export function retellDeliveryBody(kind: string, callJson: string): string {
  return `{"event":${JSON.stringify(kind)},"call":${callJson}}`;
}

/**
 * `x-retell-signature`: `v=<ms>,d=<hex HMAC-SHA256 of body + ms>`, keyed with the whole secret
 * string as UTF-8: what `Retell.verify(body, secret, signature)` of Retell's SDKs checks (it
 * refuses a timestamp more than 5 minutes from its clock).
 */
export function retellSignature(secret: string, body: string, nowMs: number): string {
  const timestamp = Math.floor(nowMs);
  return `v=${timestamp},d=${createHmac('sha256', secret).update(body + String(timestamp)).digest('hex')}`;
}

/** The headers of a delivery attempt; a type alias, not an interface, so that it is the `Record<string, string>` the client sends. */
export type SignedHeaders = {
  'content-type': string;
  'user-agent': string;
  'x-service-event': string;
  'x-service-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  /** Only on Retell's agent-level events. */
  'x-retell-signature'?: string;
};

export const USER_AGENT = 'Switchboard-Webhooks/1.0';

/** Every header of a delivery attempt. `webhookId` is the same on every attempt of one delivery. */
export function signedHeaders(secret: string, kind: string, webhookId: string, nowMs: number, body: string | Buffer): SignedHeaders {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': kind,
    'x-service-signature': serviceSignature(secret, body),
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(secret, webhookId, timestamp, body),
  };
}
