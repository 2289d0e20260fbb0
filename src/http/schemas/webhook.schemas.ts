import { Type, type Static } from '@sinclair/typebox';
import { Nullable, ResourceId, Strict } from '../../domain/schema-kit.ts';
import { DELIVERY_STATUSES, EVENT_KINDS, MAX_WEBHOOK_URL_LENGTH, WEBHOOK_STATUSES } from '../../domain/webhook.ts';
import { WebhookUrl } from '../../domain/agent.ts';

/**
 * A positive integer in a query string (query values arrive as strings): at most 15 digits, so it
 * is a safe integer when read (16 digits may not be: 9999999999999999 reads as 10^16).
 */
export const IntegerText = Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'A positive integer of at most 15 digits.' });
const Limit = Type.String({ pattern: '^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$', description: '1 to 200 (default 50).' });
const WebhookId = ResourceId;

export const SetWebhookBody = Strict({
  url: WebhookUrl,
  events: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    minItems: 1,
    maxItems: 16,
    description: `Event kinds (${EVENT_KINDS.join(', ')}), or exactly ["*"] for all.`,
  }),
  id: Type.Optional(WebhookId),
}, { title: 'SetWebhookRequest' });
export type SetWebhookBody = Static<typeof SetWebhookBody>;

export const DeleteWebhookBody = Strict({
  id: Type.Optional(WebhookId),
  url: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL_LENGTH })),
}, { title: 'DeleteWebhookRequest', description: 'Exactly one of `id` and `url`.' });

export const WebhookResponse = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    secret: Type.Optional(Type.String({ description: 'Only in the response that created the webhook.' })),
    status: Type.Union(WEBHOOK_STATUSES.map((s) => Type.Literal(s))),
    disabled_reason: Nullable(Type.String({ description: 'gone (the receiver answered 410) or failing (failed continuously for 5 days).' })),
    disabled_at: Nullable(Type.Integer()),
    failing_since: Nullable(Type.Integer({ description: 'Start of the current run of failed attempts (epoch ms).' })),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    updated_at: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'Webhook' },
);

export const ListWebhooksResponse = Type.Object(
  {
    webhooks: Type.Array(WebhookResponse),
    available_events: Type.Array(Type.String()),
  },
  { title: 'WebhookList' },
);

export const DeleteWebhookResponse = Type.Object({ deleted: Type.Literal(true), id: Type.String() }, { title: 'DeletedWebhook' });

export const DeliveriesQuery = Strict({
  webhook_id: Type.Optional(WebhookId),
  event: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z_.]+$', description: 'An event kind, e.g. call.finished.' })),
  event_id: Type.Optional(ResourceId),
  status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
  limit: Type.Optional(Limit),
  pagination_key: Type.Optional(ResourceId),
});

const NullableInt = Nullable(Type.Integer());
export const DeliveryResponse = Type.Object(
  {
    id: Type.String(),
    event_id: Type.String({ description: 'Also the webhook-id header of every attempt.' }),
    event: Type.String(),
    webhook_id: Nullable(Type.String({ description: "Null for a delivery to an agent's webhook_url." })),
    url: Type.String(),
    status: Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s))),
    attempt_count: Type.Integer(),
    next_attempt_at: NullableInt,
    last_attempt_at: NullableInt,
    last_status_code: NullableInt,
    last_error: Nullable(Type.String()),
    last_latency_ms: NullableInt,
    delivered_at: NullableInt,
    created_at: Type.Integer(),
    data: Nullable(Type.Object({}, { additionalProperties: true, description: "The event's data, as each attempt's body carries it (beside event and sent_at); null once the event was pruned." })),
    attempts: Type.Array(
      Type.Object({
        attempt: Type.Integer(),
        started_at: Type.Integer(),
        status_code: NullableInt,
        latency_ms: Type.Integer(),
        outcome: Type.String({ description: 'delivered, retrying, exhausted, failed, refused or gone.' }),
        error: Nullable(Type.String()),
        response_excerpt: Nullable(Type.String()),
        next_attempt_at: NullableInt,
      }),
    ),
  },
  { title: 'WebhookDelivery' },
);

export const DeliveriesResponse = Type.Object(
  {
    deliveries: Type.Array(DeliveryResponse),
    next_pagination_key: Nullable(Type.String()),
  },
  { title: 'WebhookDeliveryPage' },
);

export const RedeliverBody = Strict({ delivery_id: ResourceId }, { title: 'RedeliverRequest' });

export const TestEventBody = Strict({ id: ResourceId }, { title: 'WebhookTestRequest' });

export const AgentSecretResponse = Type.Object(
  {
    secret: Type.String(),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
  },
  { title: 'AgentWebhookSecret' },
);

export const LeadGetQuery = Strict({ id: IntegerText });
export const PageQuery = Strict({ limit: Type.Optional(Limit), pagination_key: Type.Optional(IntegerText) });
export const TicketListQuery = Strict({
  limit: Type.Optional(Limit),
  pagination_key: Type.Optional(IntegerText),
  lead_id: Type.Optional(IntegerText),
});
