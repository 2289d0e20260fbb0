import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CallResponse } from '../../services/call.view.ts';
import { CreatePhoneCallBody, RegisterPhoneCallBody, type PhoneCallService } from '../../services/phone-call.service.ts';
import { ErrorResponse, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

/** Outbound phone calls (issue 24), in Retell's path. */
export function phoneCallRoutes(phoneCalls: PhoneCallService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/v2/create-phone-call', {
      schema: operation({
        operationId: 'createPhoneCall',
        tags: ['calls'],
        summary: 'Place a phone call',
        description:
          'Calls `to_number` from one of the account’s numbers, on its outbound agent (or `override_agent_id`). Answers 201 with the call, `registered` while it rings; it becomes `ongoing` when answered, and ends `dial_busy`, `dial_no_answer` or `dial_failed` when not.',
        body: CreatePhoneCallBody,
        response: { 201: CallResponse, ...authErrors, 409: ErrorResponse, 429: ErrorResponse },
      }),
    }, async (request, reply) => reply.code(201).send(await phoneCalls.createPhoneCall(request.principal, request.body)));

    app.post('/v2/register-phone-call', {
      schema: operation({
        operationId: 'registerPhoneCall',
        tags: ['calls'],
        summary: 'Register a phone call that your PBX dials in',
        description:
          'Registers a call on `agent_id` that your own PBX or carrier connects by sending an INVITE to `sip:{call_id}@SIP_PUBLIC_HOST` (the server’s SIP endpoint). Answers 201 with the call, `registered` until the INVITE comes (at most 5 minutes), then `ongoing`.',
        body: RegisterPhoneCallBody,
        response: { 201: CallResponse, ...authErrors, 409: ErrorResponse, 429: ErrorResponse },
      }),
    }, async (request, reply) => reply.code(201).send(await phoneCalls.registerPhoneCall(request.principal, request.body)));
  };
}
