import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, type ErrorCategory, isAppError } from '../domain/errors.ts';

/** The HTTP status of each error category; the only place statuses are chosen for errors. */
const STATUS: Record<ErrorCategory, number> = {
  invalid: 400,
  unauthenticated: 401,
  payment_required: 402,
  not_found: 422, // spec: "a call or agent that does not exist under the caller's key ... 422"
  conflict: 409,
  too_large: 413,
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

export function sendAppError(reply: FastifyReply, error: AppError): FastifyReply {
  const status = STATUS[error.category];
  if (error.retryAfterMs !== undefined) reply.header('Retry-After', Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
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
      message: `No route ${request.method} ${request.url.split('?')[0]}.`,
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
