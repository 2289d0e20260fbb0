import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../../domain/errors.ts';
import type { CallService } from '../../services/call.service.ts';
import { CallResponse, CallStatsQuery, CallStatsResponse, CreateWebCallBody, ListCallsBody, UpdateCallBody } from '../schemas/call.schemas.ts';
import { ErrorResponse, PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const CallIdParam = Type.Object({ call_id: PathId });
/** 1 to 255 printable ASCII characters, space included (Node strips spaces around a header value). */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** The call operations of the spec, under /v2/. */
export function callRoutes(calls: CallService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The spec's path, and the one Retell's SDK 5 posts to (`call.createWebCall`): the same
    // operation and answer (our call object, not Retell's v3 `{ice_servers, transport}` shape).
    // The v3 path is left out of the OpenAPI document: one operation, one method in generated
    // clients (docs/api.md lists the paths kept for Retell's SDK).
    for (const [url, hide] of [['/v2/create-web-call', false], ['/v3/create-web-call', true]] as const) {
      app.post(url, {
        schema: operation({
          operationId: 'createWebCall',
          tags: ['calls'],
          summary: 'Create a web call',
          description:
            'Answers 201 with the call and its single-use `access_token` (for the browser SDK or `cli join`). An `Idempotency-Key` header makes retries with the same body within 24 h return the same call (with `Idempotent-Replayed: true`).',
          hide,
          headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: '1 to 255 printable ASCII characters.' })) }),
          body: CreateWebCallBody,
          response: { 201: CallResponse, ...authErrors, 402: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse },
        }),
      }, async (request, reply) => {
        const key = request.headers['idempotency-key'];
        if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
          throw errors.invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters');
        }
        const { call, replayed } = await calls.createWebCall(request.principal, request.body, key);
        if (replayed) reply.header('Idempotent-Replayed', 'true');
        return reply.code(201).send(call);
      });
    }

    app.patch('/v2/update-call/:call_id', {
      schema: operation({ operationId: 'updateCall', tags: ['calls'], summary: 'Update a call', params: CallIdParam, body: UpdateCallBody, response: { 200: CallResponse, ...authErrors } }),
    }, async (request) => calls.updateCall(request.principal.accountId, request.params.call_id, request.body));

    app.get('/v2/get-call/:call_id', {
      schema: operation({ operationId: 'getCall', tags: ['calls'], summary: 'Get a call', params: CallIdParam, response: { 200: CallResponse, ...authErrors } }),
    }, async (request) => calls.getCall(request.principal.accountId, request.params.call_id));

    app.post('/v2/list-calls', {
      schema: operation({
        operationId: 'listCalls',
        tags: ['calls'],
        summary: 'List calls',
        description: 'Newest first by default. `pagination_key` is the `call_id` of the last call of the previous page.',
        body: ListCallsBody,
        response: { 200: Type.Array(CallResponse), ...authErrors },
      }),
    }, async (request) => calls.listCalls(request.principal.accountId, request.body ?? {}));

    app.get('/v2/call-stats', {
      schema: operation({
        operationId: 'getCallStats',
        tags: ['calls'],
        summary: 'Calls per day and reply latency',
        description:
          'Per day of creation (UTC, or the `utc_offset_minutes` clock): calls by status, successful and unsuccessful by `call_analysis.call_successful`, and the end-to-end reply latency p50 / p90 over every agent reply of the day. Up to 92 days; every day of the range is listed.',
        querystring: CallStatsQuery,
        response: { 200: CallStatsResponse, ...authErrors },
      }),
    }, async (request) => calls.callStats(request.principal.accountId, request.query));

    app.delete('/v2/delete-call/:call_id', {
      schema: operation({ operationId: 'deleteCall', tags: ['calls'], summary: 'Delete a call and its recording', params: CallIdParam, response: { 204: Type.Null(), ...authErrors, 409: ErrorResponse } }),
    }, async (request, reply) => {
      await calls.deleteCall(request.principal.accountId, request.params.call_id);
      return reply.code(204).send(null);
    });
  };
}
