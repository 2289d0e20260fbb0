/**
 * The one error type of the service. Services throw `errors.x(...)`; only the HTTP edge turns the
 * error's category into a status code (src/http/error-handler.ts).
 */
export type ErrorCategory =
  | 'invalid' // the request is wrong; retrying it unchanged cannot help
  | 'unauthenticated'
  | 'payment_required'
  | 'not_found'
  | 'conflict'
  | 'too_large'
  | 'range_not_satisfiable'
  | 'rate_limited'
  | 'unavailable' // a dependency is down; retrying later may help
  | 'internal';

export interface AppErrorOptions {
  details?: Record<string, unknown>;
  retryAfterMs?: number;
  cause?: unknown;
  /** Whether sending the same request again later may succeed, where the category does not say (a conflict that passes). */
  retryable?: boolean;
}

export class AppError extends Error {
  readonly code: string;
  readonly category: ErrorCategory;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterMs: number | undefined;
  readonly #retryable: boolean | undefined;

  constructor(code: string, category: ErrorCategory, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.category = category;
    this.details = options.details;
    this.retryAfterMs = options.retryAfterMs;
    this.#retryable = options.retryable;
  }

  /** Whether the same request may succeed if sent again later. */
  get retryable(): boolean {
    return this.#retryable ?? (this.category === 'rate_limited' || this.category === 'unavailable' || this.category === 'internal');
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/** The registry: every error the service reports, with its stable code. */
export const errors = {
  invalidRequest: (message: string, details?: Record<string, unknown>) =>
    new AppError('invalid_request', 'invalid', message, { details }),
  unauthenticated: () => new AppError('unauthenticated', 'unauthenticated', 'API key is missing or invalid.'),
  trialEnded: () => new AppError('trial_ended', 'payment_required', 'Trial has ended, please add payment method.'),
  rateLimited: (retryAfterMs: number) =>
    new AppError('rate_limited', 'rate_limited', 'Account rate limited, please throttle your requests.', {
      retryAfterMs,
    }),
  concurrencyLimitReached: (limit: number) =>
    new AppError(
      'concurrency_limit_reached',
      'rate_limited',
      `The account has as many calls registered or ongoing as its concurrency limit allows (${limit}); try again once one has ended.`,
      { details: { concurrency_limit: limit } },
    ),
  /**
   * The server's embedded recogniser holds as many calls as it takes (POCKETSPHINX_MAX_STREAMS):
   * answered as the account's concurrency limit is (429, the same code), before anything is created.
   */
  recogniserFull: (open: number, max: number) =>
    new AppError(
      'concurrency_limit_reached',
      'rate_limited',
      `This server's embedded speech recogniser is serving as many calls as it takes (${open} of ${max}); try again once one has ended.`,
      { details: { server_recognition_streams: max } },
    ),
  payloadTooLarge: (message: string) => new AppError('payload_too_large', 'too_large', message),
  /** A body-less request to a route whose body has required fields. */
  emptyBody: () => new AppError('invalid_json', 'invalid', 'The JSON body is empty.'),
  /** A `Range` outside the file (`size` bytes). */
  rangeNotSatisfiable: (size: number) =>
    new AppError('range_not_satisfiable', 'range_not_satisfiable', `The range is outside the recording (${size} bytes).`),
  /** The demo's per-client-address limit on new calls. */
  demoRateLimited: (retryAfterMs: number) =>
    new AppError('demo_rate_limited', 'rate_limited', 'Too many demo calls from this address; try again later.', { retryAfterMs }),
  /** The demo's cap on calls registered or in progress at once. */
  demoBusy: (retryAfterMs: number) =>
    new AppError('demo_busy', 'rate_limited', 'The demo has as many calls as it may run at once; try again later.', { retryAfterMs }),

  /** An access token that is forged, malformed, or whose call no longer exists. */
  accessTokenInvalid: (why: 'forged' | 'call_gone' = 'forged') =>
    new AppError('token_invalid', 'unauthenticated', why === 'forged' ? 'The access token is not valid.' : 'The call of this access token no longer exists.'),
  accessTokenExpired: () => new AppError('token_expired', 'unauthenticated', 'The access token has expired.'),
  accessTokenUsed: () => new AppError('token_used', 'unauthenticated', 'The access token was already used.'),
  /** A WebRTC signalling session (docs/media-protocol.md, "WebRTC") this server does not hold, or that has ended. */
  webrtcSessionNotFound: (id: string) =>
    new AppError('webrtc_session_not_found', 'not_found', `WebRTC session ${truncateForMessage(id)} does not exist on this server, or has ended.`),
  /** An SDP offer or ICE candidate the server cannot use; the message names the field. */
  webrtcInvalid: (message: string) => new AppError('invalid_request', 'invalid', message),
  /** The server holds as many WebRTC sessions still connecting as it may. */
  webrtcBusy: () => new AppError('webrtc_busy', 'unavailable', 'Too many WebRTC sessions are connecting; try again shortly, or join over the WebSocket.', { retryAfterMs: 1_000 }),
  /** The speech synthesiser failed or took too long to speak a voice preview (issue 27); the message says which. */
  speechUnavailable: (message: string, cause?: unknown) => new AppError('tts_unavailable', 'unavailable', message, { retryAfterMs: 1_000, cause }),
  /** An ICE restart over the bounds of one WebRTC session (docs/media-protocol.md, "ICE restarts"). */
  webrtcRestartLimited: (message: string, retryAfterMs?: number) =>
    new AppError('webrtc_restart_limited', 'rate_limited', message, retryAfterMs === undefined ? { retryable: false } : { retryAfterMs }),
  /** The server is shutting down. */
  serverShuttingDown: () => new AppError('server_shutting_down', 'unavailable', 'The server is shutting down; try again shortly.', { retryAfterMs: 1_000 }),
  /** A call that cannot be deleted while it runs. */
  callOngoing: (id: string) => new AppError('call_ongoing', 'conflict', `Call ${truncateForMessage(id)} is ongoing; end it before deleting it.`),

  callNotFound: (id: string) => notFound('call_not_found', 'call', id),
  agentNotFound: (id: string) => notFound('agent_not_found', 'agent', id),
  agentVersionNotFound: (id: string, version: number) =>
    new AppError('agent_version_not_found', 'not_found', `Agent ${id} has no version ${version} under this API key.`),
  conversationFlowNotFound: (id: string) => notFound('conversation_flow_not_found', 'conversation flow', id),
  serviceLlmNotFound: (id: string) => notFound('service_llm_not_found', 'service LLM', id),
  apiKeyNotFound: (id: string) => notFound('api_key_not_found', 'API key', id),
  accountNotFound: (id: string) => notFound('account_not_found', 'account', id),
  webhookNotFound: (id: string) => notFound('webhook_not_found', 'webhook', id),
  deliveryNotFound: (id: string) => notFound('delivery_not_found', 'webhook delivery', id),
  voiceNotFound: (id: string) =>
    new AppError('voice_not_found', 'not_found', `This server's speech engine has no voice ${truncateForMessage(id)}; GET /list-voices lists its voices.`),
  phoneNumberNotFound: (number: string) => notFound('phone_number_not_found', 'phone number', number),
  /** Issue 24: a number is held by one account (inbound calls route by it). */
  phoneNumberTaken: (number: string) =>
    new AppError('phone_number_taken', 'conflict', `Phone number ${truncateForMessage(number)} is already imported.`),
  phoneNumberLimitReached: (max: number) =>
    new AppError('phone_number_limit_reached', 'conflict', `An account can hold at most ${max} phone numbers; delete one first.`),
  testCaseNotFound: (id: string) => notFound('test_case_not_found', 'test case', id),
  testRunNotFound: (id: string) => notFound('test_run_not_found', 'test run', id),
  leadNotFound: (id: string | number) => notFound('lead_not_found', 'lead', String(id)),
  knowledgeBaseNotFound: (id: string) => notFound('knowledge_base_not_found', 'knowledge base', id),
  knowledgeSourceNotFound: (id: string) => notFound('knowledge_base_source_not_found', 'knowledge base source', id),
  /** An account's or a knowledge base's bound (KNOWLEDGE_LIMITS) reached. */
  knowledgeBaseLimitReached: (message: string) => new AppError('knowledge_base_limit_reached', 'conflict', message),
  recordingNotFound: (callId: string) =>
    new AppError(
      'recording_not_found',
      'not_found',
      `Call ${truncateForMessage(callId)} has no recording (not finished, not kept by its storage policy, or deleted).`,
    ),
  recordingLinkInvalid: () =>
    new AppError('recording_link_invalid', 'unauthenticated', 'The recording link is not valid; read the call again for a fresh recording_url.'),
  recordingLinkExpired: () =>
    new AppError('recording_link_expired', 'unauthenticated', 'The recording link has expired; read the call again for a fresh recording_url.'),
  webhookUrlTaken: () => new AppError('webhook_url_taken', 'conflict', 'Another webhook of this account has that url.'),
  webhookLimitReached: (max: number) =>
    new AppError('webhook_limit_reached', 'conflict', `An account can have at most ${max} webhooks; delete one first.`),
  webhookGone: (state: 'deleted' | 'disabled') =>
    new AppError(`webhook_${state}`, 'conflict', state === 'deleted'
      ? 'The webhook of this delivery was deleted.'
      : 'The webhook of this delivery is disabled; re-enable it with set.php first.'),
  deliveryInFlight: () => new AppError('delivery_in_flight', 'conflict', 'This delivery is being sent right now.'),

  inUse: (what: string, id: string, by: string) =>
    new AppError('in_use', 'conflict', `The ${what} ${id} is used by ${by}; change or delete that first.`),
  idempotencyKeyReused: () =>
    new AppError(
      'idempotency_key_reused',
      'conflict',
      'This Idempotency-Key was used with a different request body in the last 24 hours.',
    ),
  idempotencyKeyInFlight: () =>
    new AppError('idempotency_key_in_flight', 'conflict', 'A request with this Idempotency-Key is still in progress.', { retryable: true }),

  storageUnavailable: (cause: unknown) =>
    new AppError('storage_unavailable', 'unavailable', 'The store is not reachable.', { cause }),
  internal: (cause?: unknown) =>
    new AppError('internal_error', 'internal', 'An unexpected server error occurred.', { cause }),
};

/** The codes of the access-token errors above: why a join is refused. */
export const ACCESS_TOKEN_ERRORS = ['token_invalid', 'token_expired', 'token_used'] as const;
export type AccessTokenErrorCode = (typeof ACCESS_TOKEN_ERRORS)[number];

/** The code of an access-token error of the registry, or null for any other error. */
export function accessTokenErrorCode(error: unknown): AccessTokenErrorCode | null {
  if (!isAppError(error)) return null;
  return (ACCESS_TOKEN_ERRORS as readonly string[]).includes(error.code) ? (error.code as AccessTokenErrorCode) : null;
}

function notFound(code: string, what: string, id: string): AppError {
  return new AppError(code, 'not_found', `Cannot find ${what} ${truncateForMessage(id)} under this API key.`);
}

/** Keeps user-supplied ids in messages short and printable. */
export function truncateForMessage(value: string, max = 80): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > max ? `${printable.slice(0, max)}...` : printable;
}
