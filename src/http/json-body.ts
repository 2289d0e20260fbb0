import type { FastifyInstance, FastifyRequest, RouteOptions, preValidationHookHandler } from 'fastify';
import { errors } from '../domain/errors.ts';

/**
 * JSON bodies at the edge. The parser is Fastify's own (with its prototype-poisoning checks),
 * except that an empty body is no body: clients that send `Content-Type: application/json` and
 * nothing else (Retell's SDK on deletes and on lists without arguments, many HTTP libraries on
 * DELETE) are answered as if they had sent no `Content-Type`. Then, on every route with a body
 * schema, a request without a body is read as `{}` when the schema has no required field (list
 * and update routes), and refused with 400 `invalid_json` "The JSON body is empty." otherwise.
 * Routes without a body schema (GET, DELETE) ignore the body as before.
 *
 * Call before the routes are registered (it uses an `onRoute` hook).
 */
export function installJsonBody(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    void parseJson(request, typeof body === 'string' ? body : body.toString('utf8'), done);
  });

  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema?.body as { type?: unknown; required?: unknown[] } | undefined;
    if (schema === undefined) return;
    const optional = schema.type === 'object' && (schema.required === undefined || schema.required.length === 0);
    route.preValidation = [...hooksOf(route.preValidation), optional ? emptyAsObject : refuseEmpty];
  });
}

function emptyAsObject(request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void {
  if (request.body === undefined) request.body = {};
  done();
}

function refuseEmpty(request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void {
  if (request.body === undefined) done(errors.emptyBody());
  else done();
}

/** A route option's hooks as an array (Fastify takes one function or several). */
export function hooksOf(hooks: RouteOptions['preValidation']): preValidationHookHandler[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}
