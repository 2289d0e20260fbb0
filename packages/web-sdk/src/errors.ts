import type { ServerErrorCode } from '../../../src/protocol/media.constants.ts';

/**
 * Error codes the SDK reports in `error` events and in the rejection of `startCall()`. Codes from
 * the server (docs/media-protocol.md: `token_invalid`, `token_expired`, `token_used`,
 * `join_timeout`, `unsupported_protocol`, `bad_message`, `engine_unavailable`, ...; see
 * ServerErrorCode) are passed through.
 */
export type WebCallErrorCode =
  /** The user or the browser refused the microphone (NotAllowedError). */
  | 'microphone_denied'
  /** No microphone, or the requested capture device does not exist. */
  | 'microphone_not_found'
  /** The microphone exists but could not be opened (in use by another app, hardware error). */
  | 'microphone_unavailable'
  /** This browser lacks WebSocket, AudioWorklet or getUserMedia (or the page is not a secure context). */
  | 'unsupported_browser'
  /** The WebSocket could not be opened, or the server did not answer the join in time. */
  | 'connection_failed'
  /** The connection dropped during the call; the server ends the call (`client_disconnected`) within seconds. */
  | 'connection_lost'
  /** `startCall()` while a call is already running. */
  | 'call_in_progress'
  /** `stopCall()` was called while `startCall()` was still connecting (no `error` event). */
  | 'call_cancelled'
  /** Invalid arguments to `startCall()`, such as no access token (the page's backend gave none). */
  | 'invalid_argument'
  /** The promise given as `accessToken` rejected (the page's backend failed); nothing was connected. */
  | 'access_token_failed'
  /** A code of the server's `error` message. */
  | ServerErrorCode
  | (string & {});

/** The error type of the SDK: a stable `code` and a message fit to show a user. */
export class WebCallError extends Error {
  readonly code: WebCallErrorCode;
  constructor(code: WebCallErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebCallError';
    this.code = code;
  }
}

/** Messages for the server's refusal codes, when the server sends none. */
export const SERVER_ERROR_MESSAGES: Record<string, string> = {
  token_invalid: 'The access token is not valid for this server, or its call was deleted.',
  token_expired: 'The access token has expired: join within 30 s of creating the call.',
  token_used: 'The access token was already used: create a new call for every join.',
  join_timeout: 'The server did not receive the join message in time.',
  unsupported_protocol: 'The server does not speak this SDK’s protocol version.',
  engine_unavailable: 'An engine the agent needs is not available on the server.',
  recogniser_busy: 'The server is serving as many calls as it can hear now; join again in a few seconds (the token is still unused).',
};

/** Maps a getUserMedia failure to an SDK error. */
export function microphoneError(error: unknown): WebCallError {
  const name = error instanceof Error || (typeof DOMException !== 'undefined' && error instanceof DOMException) ? (error as Error).name : '';
  if (name === 'NotAllowedError' || name === 'SecurityError') {
    return new WebCallError('microphone_denied', 'Microphone access was refused. Allow the microphone for this site and try again.', { cause: error });
  }
  if (name === 'NotFoundError' || name === 'OverconstrainedError') {
    return new WebCallError('microphone_not_found', 'No microphone was found (or the chosen one is gone).', { cause: error });
  }
  return new WebCallError('microphone_unavailable', 'The microphone could not be opened; another application may be using it.', { cause: error });
}
