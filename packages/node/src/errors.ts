import type { ErrorBody } from './types.ts';

/** The base of every error the client throws. */
export class SwitchboardError extends Error {
  override name = 'SwitchboardError';
}

/**
 * The server answered an error: `status` (HTTP), `code` (stable, snake_case: `call_not_found`,
 * `invalid_request`, ...) and `message` from the body; `headers` as answered. A resource that does
 * not exist under the key is 422 (`UnprocessableEntityError`), as the API documents.
 */
export class APIError extends SwitchboardError {
  override name = 'APIError';
  readonly status: number;
  readonly code: string;
  readonly details: ErrorBody['details'];
  readonly headers: Headers;

  constructor(status: number, body: Partial<ErrorBody> | undefined, headers: Headers) {
    super(body?.message ?? `the server answered ${status}`);
    this.status = status;
    this.code = body?.code ?? `http_${status}`;
    this.details = body?.details;
    this.headers = headers;
  }

  /** The error class for `status`. */
  static from(status: number, body: Partial<ErrorBody> | undefined, headers: Headers): APIError {
    const Class = STATUS_CLASSES[status] ?? (status >= 500 ? InternalServerError : APIError);
    return new Class(status, body, headers);
  }
}

export class BadRequestError extends APIError { override name = 'BadRequestError'; }
export class AuthenticationError extends APIError { override name = 'AuthenticationError'; }
export class PaymentRequiredError extends APIError { override name = 'PaymentRequiredError'; }
export class NotFoundError extends APIError { override name = 'NotFoundError'; }
export class ConflictError extends APIError { override name = 'ConflictError'; }
/** 422: in this API, mostly a resource that does not exist under the key (`call_not_found`, ...). */
export class UnprocessableEntityError extends APIError { override name = 'UnprocessableEntityError'; }
export class RateLimitError extends APIError { override name = 'RateLimitError'; }
export class InternalServerError extends APIError { override name = 'InternalServerError'; }

const STATUS_CLASSES: Record<number, new (status: number, body: Partial<ErrorBody> | undefined, headers: Headers) => APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PaymentRequiredError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** The server could not be reached, or the connection failed before an answer (after the retries). */
export class APIConnectionError extends SwitchboardError {
  override name = 'APIConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** No answer within the request's timeout (after the retries). */
export class APITimeoutError extends APIConnectionError {
  override name = 'APITimeoutError';
}
