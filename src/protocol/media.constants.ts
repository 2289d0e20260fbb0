/**
 * Constants of the web-call media protocol, version 1 (docs/media-protocol.md). Plain values with
 * no imports at all: the server, the Node client, the browser SDK and its AudioWorklets all read
 * them from here.
 */

/** The protocol version this code speaks; a `join` with another is refused (`unsupported_protocol`). */
export const PROTOCOL_VERSION = 1;

/** The only audio rate of version 1, Hz: 16-bit LE mono PCM at 16 kHz, both ways. */
export const PROTOCOL_SAMPLE_RATE = 16_000;

/** The WebSocket path of the endpoint, below the server's base URL. */
export const WEB_CALL_PATH = '/v2/web-call';

/** The first (`join`) message must arrive within this long of the upgrade, ms. */
export const JOIN_TIMEOUT_MS = 5_000;

/** WebSocket close codes the server uses (4xxx are ours; 1000/1001/1011 are RFC 6455's). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  serverError: 1011,
  badMessage: 4400,
  unauthorized: 4401,
  joinTimeout: 4408,
  /** The client sent audio or messages far faster than real time; the call ends `error_client_flood`. */
  tooFast: 4429,
  unavailable: 4503,
} as const;

/** A close code of {@link CLOSE}. */
export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE];

/**
 * Why a join is refused, with the close code that follows the `error` message
 * (the table in docs/media-protocol.md).
 */
export const REFUSALS = {
  // Literal numbers, not `CLOSE.unauthorized`: esbuild keeps a table built from property reads in
  // every browser bundle, used or not. `satisfies` holds each one to a code of CLOSE.
  token_invalid: 4401,
  token_expired: 4401,
  token_used: 4401,
  join_timeout: 4408,
  unsupported_protocol: 4400,
  bad_message: 4400,
  engine_unavailable: 4503,
  /** The server's embedded recogniser is full; the token was not redeemed: join again shortly. */
  recogniser_busy: 4503,
  server_shutting_down: 1001,
  internal_error: 1011,
} as const satisfies Record<string, CloseCode>;

/** A refusal code of a join (a key of {@link REFUSALS}). */
export type RefusalCode = keyof typeof REFUSALS;

/**
 * Every `code` the server sends in an `error` message: the refusals of a join (`bad_message` also
 * answers a malformed message during the call), the engine failures that end a call (a custom
 * LLM's server's among them), `error_client_flood` when the client is cut off for sending far
 * faster than real time, and `error_unknown` when the call ends on an error nothing expected. The
 * wire carries a string: clients should expect codes a newer server adds.
 */
export type ServerErrorCode =
  | RefusalCode
  | 'error_asr'
  | 'error_llm'
  | 'error_tts'
  | 'error_llm_websocket_open'
  | 'error_llm_websocket_lost_connection'
  | 'error_llm_websocket_runtime'
  | 'error_llm_websocket_corrupt_payload'
  | 'error_client_flood'
  | 'error_unknown';
