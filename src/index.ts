/** The package's public exports: receiver-side helpers for Switchboard webhooks. */
export { verifyWebhook, WebhookVerificationError } from './webhooks/verify.ts';
export type { HeaderBag, VerifiedWebhook, VerifyOptions } from './webhooks/verify.ts';
