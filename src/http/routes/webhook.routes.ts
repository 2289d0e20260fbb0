import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../../domain/errors.ts';
import { EVENT_KINDS } from '../../domain/webhook.ts';
import type { WebhookService } from '../../services/webhook.service.ts';
import { ErrorResponse, authErrors } from '../schemas/common.schemas.ts';
import { type ApiTag, operation } from '../openapi.ts';
import {
  AgentSecretResponse,
  DeleteWebhookBody,
  DeleteWebhookResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  DeliveryResponse,
  ListWebhooksResponse,
  RedeliverBody,
  TestEventBody,
  SetWebhookBody,
  WebhookResponse,
} from '../schemas/webhook.schemas.ts';

const tags = ['webhooks'] as const satisfies [ApiTag];
const PREFIX = '/api/v1/webhooks';

/** The webhook operations of the spec, and the delivery log, under /api/v1/webhooks/. */
export function webhookRoutes(webhooks: WebhookService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(`${PREFIX}/list.php`, {
      schema: operation({ operationId: 'listWebhooks', tags, summary: "List the account's webhooks and the event kinds", response: { 200: ListWebhooksResponse, ...authErrors } }),
    }, async (request) => ({
      webhooks: await webhooks.listWebhooks(request.principal.accountId),
      available_events: [...EVENT_KINDS],
    }));

    app.post(`${PREFIX}/set.php`, {
      schema: operation({
        operationId: 'setWebhook',
        tags,
        summary: 'Create or update a webhook',
        description:
          'With `id`, updates that webhook; without, updates the webhook with the same `url`, else creates one (201, with `secret`, shown only then). An update answers 200 and re-enables a disabled webhook.',
        body: SetWebhookBody,
        response: { 200: WebhookResponse, 201: WebhookResponse, ...authErrors, 409: ErrorResponse },
      }),
    }, async (request, reply) => {
      const { created, webhook } = await webhooks.setWebhook(request.principal.accountId, request.body);
      return reply.code(created ? 201 : 200).send(webhook);
    });

    app.post(`${PREFIX}/delete.php`, {
      schema: operation({
        operationId: 'deleteWebhook',
        tags,
        summary: 'Delete a webhook',
        description: 'Body `{id}` or `{url}`. Its pending deliveries are cancelled.',
        body: DeleteWebhookBody,
        response: { 200: DeleteWebhookResponse, ...authErrors },
      }),
    }, async (request) => {
      const { id, url } = request.body;
      if ((id === undefined) === (url === undefined)) throw errors.invalidRequest('give exactly one of id and url');
      return webhooks.deleteWebhook(request.principal.accountId, { id, url });
    });

    app.get(`${PREFIX}/deliveries.php`, {
      schema: operation({
        operationId: 'listWebhookDeliveries',
        tags,
        summary: 'The delivery log',
        description: 'Newest first, each delivery with its attempts. Filters: webhook_id, event, event_id, status.',
        querystring: DeliveriesQuery,
        response: { 200: DeliveriesResponse, ...authErrors },
      }),
    }, async (request) => {
      const { limit, ...filter } = request.query;
      return webhooks.listDeliveries(request.principal.accountId, { ...filter, limit: limit === undefined ? undefined : Number(limit) });
    });

    app.post(`${PREFIX}/redeliver.php`, {
      schema: operation({
        operationId: 'redeliverWebhook',
        tags,
        summary: 'Send a delivery again now',
        description: 'Queues one more attempt now, with the same webhook-id; answers 202 with the delivery.',
        body: RedeliverBody,
        response: { 202: DeliveryResponse, ...authErrors, 409: ErrorResponse },
      }),
    }, async (request, reply) => reply.code(202).send(await webhooks.redeliver(request.principal.accountId, request.body.delivery_id)));

    app.post(`${PREFIX}/test.php`, {
      schema: operation({
        operationId: 'sendWebhookTestEvent',
        tags,
        summary: 'Send a test event to a webhook',
        description:
          'Queues a `webhook.test` event to this webhook alone, whatever events it listens to, signed and logged like any delivery; answers 202 with the delivery. 409 when the webhook is disabled.',
        body: TestEventBody,
        response: { 202: DeliveryResponse, ...authErrors, 409: ErrorResponse },
      }),
    }, async (request, reply) => reply.code(202).send(await webhooks.sendTestEvent(request.principal.accountId, request.body.id)));

    app.get(`${PREFIX}/agent-secret.php`, {
      schema: operation({
        operationId: 'getAgentWebhookSecret',
        tags,
        summary: "The secret that signs deliveries to agents' webhook_url",
        response: { 200: AgentSecretResponse, ...authErrors },
      }),
    }, async (request) => webhooks.agentSecret(request.principal.accountId));

    app.post(`${PREFIX}/agent-secret.php`, {
      schema: operation({
        operationId: 'rotateAgentWebhookSecret',
        tags,
        summary: "Rotate the secret that signs deliveries to agents' webhook_url",
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: { 200: AgentSecretResponse, ...authErrors },
      }),
    }, async (request) => webhooks.rotateAgentSecret(request.principal.accountId));
  };
}
