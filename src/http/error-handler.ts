import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, type ErrorCategory, isAppError, truncateForMessage } from '../domain/errors.ts';
import { rawJsonResponse } from '../lib/raw-http.ts';

/** The HTTP status of each error category; the only place statuses are chosen for errors. */
const STATUS: Record<ErrorCategory, number> = {
  invalid: 400,
  unauthenticated: 401,
  payment_required: 402,
  not_found: 422, // spec: "a call or agent that does not exist under the caller's key ... 422"
  conflict: 409,
  too_large: 413,
  range_not_satisfiable: 416,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
};

export interface ErrorBody {
  status: 'error';
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Maps Fastify's own request errors (parsing, validation) to our codes. */
const FASTIFY_CODES: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 400,
    code: 'invalid_content_type',
    message: 'Content-Type must be application/json.',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_request', message: 'Invalid Content-Length.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The JSON body is empty.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The body is not valid JSON.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'The body is larger than 1 MB.' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, code: 'invalid_content_type', message: 'Invalid Content-Type.' },
};

/**
 * Errors of the HTTP layer itself, answered before a route runs (some before Fastify sees the
 * request): the body never echoes the request.
 */
export const PROTOCOL_ERRORS = {
  /** Headers or body not received within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS. */
  request_timeout: { status: 408, code: 'request_timeout', message: 'The request was not received in time.' },
  /** Not parseable as HTTP/1.1 (bad request line or header, bad chunking, Content-Length with Transfer-Encoding). */
  malformed: { status: 400, code: 'malformed_request', message: 'The request is not valid HTTP.' },
  /** Request line and headers above Node's 16 KiB. */
  headers_too_large: { status: 431, code: 'headers_too_large', message: 'The request headers are too large.' },
  /** A path with bad percent-encoding. */
  bad_url: { status: 400, code: 'invalid_url', message: 'The URL is not valid (bad percent-encoding).' },
  /** A path parameter longer than the router allows. */
  uri_too_long: { status: 414, code: 'uri_too_long', message: 'A path segment of the URL is too long.' },
  missing_host: { status: 400, code: 'invalid_request', message: 'An HTTP/1.1 request needs a Host header.' },
  /** CONNECT (this is not a proxy): as any method and path without a route. */
  connect: { status: 404, code: 'route_not_found', message: 'No route CONNECT.' },
  expectation_failed: { status: 417, code: 'expectation_failed', message: 'Only "Expect: 100-continue" is supported.' },
  shutting_down: { status: 503, code: 'shutting_down', message: 'The server is shutting down; retry the request.' },
} as const satisfies Record<string, { status: number; code: string; message: string }>;
/** The name of one of the HTTP layer's own errors. */
export type ProtocolError = keyof typeof PROTOCOL_ERRORS;

/** The whole response for a protocol error, to write on a raw socket (it closes the connection). */
export function rawProtocolError(kind: ProtocolError): string {
  const { status, code, message } = PROTOCOL_ERRORS[kind];
  return rawJsonResponse(status, { status: 'error', code, message } satisfies ErrorBody);
}

/** Answers a protocol error through Fastify's reply, when there is one. */
export function sendProtocolError(reply: FastifyReply, kind: ProtocolError): FastifyReply {
  const { status, code, message } = PROTOCOL_ERRORS[kind];
  return reply.code(status).send({ status: 'error', code, message } satisfies ErrorBody);
}

/**
 * Fastify's `frameworkErrors`: the router's errors before any hook runs (bad percent-encoding,
 * a path parameter over `maxParamLength`), in our body instead of Fastify's, which echoes the URL.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_BAD_URL') sendProtocolError(reply, 'bad_url');
  else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') sendProtocolError(reply, 'uri_too_long');
  else {
    request.log.error({ err: error }, 'router error');
    reply.code(500).send({ status: 'error', code: 'internal_error', message: 'An unexpected server error occurred.' } satisfies ErrorBody);
  }
}

export function sendAppError(reply: FastifyReply, error: AppError): FastifyReply {
  const status = STATUS[error.category];
  if (error.retryAfterMs !== undefined) reply.header('Retry-After', Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
  // Read by Stainless-generated SDKs (Retell's among them), which otherwise retry every 409.
  reply.header('x-should-retry', error.retryable ? 'true' : 'false');
  const body: ErrorBody = { status: 'error', code: error.code, message: error.message };
  if (error.details) body.details = error.details;
  return reply.code(status).send(body);
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (isAppError(error)) {
      if (error.category === 'internal' || error.category === 'unavailable') {
        request.log.error({ err: error.cause ?? error, code: error.code }, 'request failed');
      }
      return sendAppError(reply, error);
    }
    if (error.validation) {
      return reply.code(400).send({
        status: 'error',
        code: 'invalid_request',
        message: describeValidation(error),
      } satisfies ErrorBody);
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) return reply.code(known.status).send({ status: 'error', code: known.code, message: known.message });
    if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
      return reply.code(400).send({ status: 'error', code: 'invalid_json', message: 'The body is not valid JSON.' });
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send({ status: 'error', code: 'invalid_request', message: 'Invalid request.' });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply
      .code(500)
      .send({ status: 'error', code: 'internal_error', message: 'An unexpected server error occurred.' });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({
      status: 'error',
      code: 'route_not_found',
      message: `No route ${request.method} ${truncateForMessage(request.url.split('?')[0] ?? '', 100)}.`,
    } satisfies ErrorBody);
  });
}

/** One readable sentence from Ajv's first error, e.g. "body/agent_id must be string". */
function describeValidation(error: FastifyError): string {
  const first = mostSpecific(error.validation ?? []);
  if (!first) return 'Invalid request format.';
  const where = `${error.validationContext ?? 'body'}${first.instancePath ?? ''}`;
  const params = first.params;
  if (first.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    return `${where} has an unknown field: ${params.additionalProperty}`;
  }
  if (first.keyword === 'required' && typeof params.missingProperty === 'string') {
    return `${where} must have the field ${params.missingProperty}`;
  }
  return `${where} ${first.message ?? 'is invalid'}`;
}

type ValidationIssue = NonNullable<FastifyError['validation']>[number];
const GENERIC_KEYWORDS = new Set(['const', 'enum', 'anyOf', 'oneOf', 'if']);

/**
 * For unions Ajv reports every branch's failure; the most useful one went deepest into the value
 * (the branch whose `type` matched), and a specific keyword beats a `const` mismatch.
 */
function mostSpecific(issues: ValidationIssue[]): ValidationIssue | undefined {
  let best: ValidationIssue | undefined;
  const depth = (issue: ValidationIssue) => (issue.instancePath ?? '').split('/').length;
  for (const issue of issues) {
    if (!best) best = issue;
    else if (depth(issue) > depth(best)) best = issue;
    else if (depth(issue) === depth(best) && GENERIC_KEYWORDS.has(best.keyword) && !GENERIC_KEYWORDS.has(issue.keyword)) best = issue;
  }
  return best;
}
