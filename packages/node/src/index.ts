/**
 * @switchboard/node: the Switchboard API from Node.js (20+), typed from the server's own schemas,
 * with retries, idempotent call creation, timeouts, and webhook verification. No dependencies.
 */
export { Switchboard, Switchboard as default, VERSION, retryDelayMs, shouldRetry, type ClientOptions, type RequestOptions } from './client.ts';
export type { Agents, Calls, ConversationFlows, Leads, ServiceLlms, Tickets, Webhooks } from './client.ts';
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PaymentRequiredError,
  RateLimitError,
  SwitchboardError,
  UnprocessableEntityError,
} from './errors.ts';
export type * from './types.ts';
// The server's own implementation, bundled: one source.
export { WebhookVerificationError, verifyWebhook, type HeaderBag, type VerifiedWebhook, type VerifyOptions } from '../../../src/webhooks/verify.ts';
