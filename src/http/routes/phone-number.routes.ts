import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PhoneNumberService } from '../../services/phone-number.service.ts';
import { ErrorResponse, authErrors } from '../schemas/common.schemas.ts';
import { ImportPhoneNumberBody, PhoneNumberParam, PhoneNumberResponse, UpdatePhoneNumberBody } from '../schemas/phone-number.schemas.ts';
import { type ApiTag, operation } from '../openapi.ts';

const tags = ['phone-numbers'] as const satisfies [ApiTag];

/** Phone numbers (issue 24), in Retell's paths. The number in a path may be written with %2B or without its +. */
export function phoneNumberRoutes(numbers: PhoneNumberService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/import-phone-number', {
      schema: operation({
        operationId: 'importPhoneNumber',
        tags,
        summary: 'Import a number reached over a SIP trunk or through Twilio',
        description: 'Binds inbound and outbound agents. Secrets (trunk password, Twilio credentials) are encrypted at rest and never returned.',
        body: ImportPhoneNumberBody,
        response: { 201: PhoneNumberResponse, ...authErrors, 409: ErrorResponse },
      }),
    }, async (request, reply) => reply.code(201).send(await numbers.importNumber(request.principal.accountId, request.body)));

    app.get('/get-phone-number/:phone_number', {
      schema: operation({ operationId: 'getPhoneNumber', tags, summary: 'Get a phone number', params: PhoneNumberParam, response: { 200: PhoneNumberResponse, ...authErrors } }),
    }, async (request) => numbers.getNumber(request.principal.accountId, request.params.phone_number));

    app.get('/list-phone-numbers', {
      schema: operation({ operationId: 'listPhoneNumbers', tags, summary: "The account's phone numbers", response: { 200: Type.Array(PhoneNumberResponse), 401: authErrors[401] } }),
    }, async (request) => numbers.listNumbers(request.principal.accountId));

    app.patch('/update-phone-number/:phone_number', {
      schema: operation({
        operationId: 'updatePhoneNumber',
        tags,
        summary: 'Update a phone number',
        description: 'Changes the given fields; null clears one (null agents leave the number unanswered or unable to call).',
        params: PhoneNumberParam,
        body: UpdatePhoneNumberBody,
        response: { 200: PhoneNumberResponse, ...authErrors },
      }),
    }, async (request) => numbers.updateNumber(request.principal.accountId, request.params.phone_number, request.body));

    app.delete('/delete-phone-number/:phone_number', {
      schema: operation({ operationId: 'deletePhoneNumber', tags, summary: 'Delete a phone number (its calls stay)', params: PhoneNumberParam, response: { 204: Type.Null(), ...authErrors } }),
    }, async (request, reply) => {
      await numbers.deleteNumber(request.principal.accountId, request.params.phone_number);
      return reply.code(204).send(null);
    });
  };
}
