/**
 * The API's request and response shapes, from the server's own schemas (type-only imports: no
 * schema code reaches the client; the package's .d.ts bundles these types, TypeBox's included).
 */
import type { Static } from '@sinclair/typebox';
import type {
  AgentCreateBody,
  AgentResponse,
  AgentUpdateBody,
  ConversationFlowCreateBody,
  ConversationFlowResponse,
  ConversationFlowUpdateBody,
  ServiceLlmCreateBody,
  ServiceLlmResponse,
  ServiceLlmUpdateBody,
} from '../../../src/http/schemas/agent.schemas.ts';
import type { CreateWebCallBody, ListCallsBody, UpdateCallBody } from '../../../src/http/schemas/call.schemas.ts';
import type { ErrorResponse } from '../../../src/http/schemas/common.schemas.ts';
import type {
  AgentSecretResponse,
  DeleteWebhookResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  DeliveryResponse,
  ListWebhooksResponse,
  PageQuery,
  SetWebhookBody,
  TicketListQuery,
  WebhookResponse,
} from '../../../src/http/schemas/webhook.schemas.ts';
import type { CallView } from '../../../src/services/call.view.ts';
import type { LeadCreateInput, LeadUpdateInput, LeadView } from '../../../src/services/lead.service.ts';
import type { TicketCreateInput, TicketView } from '../../../src/services/ticket.service.ts';

/** The call object (create-web-call, get-call, list-calls, update-call, and the call.finished webhook). */
export type Call = CallView;
export type CreateWebCallParams = Static<typeof CreateWebCallBody>;
export type UpdateCallParams = Static<typeof UpdateCallBody>;
export type ListCallsParams = Static<typeof ListCallsBody>;

export type Agent = Static<typeof AgentResponse>;
export type CreateAgentParams = Static<typeof AgentCreateBody>;
export type UpdateAgentParams = Static<typeof AgentUpdateBody>;

export type ConversationFlow = Static<typeof ConversationFlowResponse>;
export type CreateConversationFlowParams = Static<typeof ConversationFlowCreateBody>;
export type UpdateConversationFlowParams = Static<typeof ConversationFlowUpdateBody>;

export type ServiceLlm = Static<typeof ServiceLlmResponse>;
export type CreateServiceLlmParams = Static<typeof ServiceLlmCreateBody>;
export type UpdateServiceLlmParams = Static<typeof ServiceLlmUpdateBody>;

export type Webhook = Static<typeof WebhookResponse>;
export type SetWebhookParams = Static<typeof SetWebhookBody>;
export type WebhookList = Static<typeof ListWebhooksResponse>;
export type DeletedWebhook = Static<typeof DeleteWebhookResponse>;
export type WebhookDelivery = Static<typeof DeliveryResponse>;
export type WebhookDeliveryPage = Static<typeof DeliveriesResponse>;
/** Filters of the delivery log; `limit` is 1 to 200. */
export type ListDeliveriesParams = Omit<Static<typeof DeliveriesQuery>, 'limit'> & { limit?: number };
export type AgentWebhookSecret = Static<typeof AgentSecretResponse>;

export type Lead = LeadView;
export type CreateLeadParams = LeadCreateInput;
export type UpdateLeadParams = LeadUpdateInput;
export type Ticket = TicketView;
export type CreateTicketParams = TicketCreateInput;
/** A page of leads or tickets: `limit` 1 to 200, `pagination_key` the previous page's `next_pagination_key`. */
export type PageParams = { [K in keyof Static<typeof PageQuery>]?: number };
export type ListTicketsParams = { [K in keyof Static<typeof TicketListQuery>]?: number };
export interface LeadPage {
  leads: Lead[];
  next_pagination_key: number | null;
}
export interface TicketPage {
  tickets: Ticket[];
  next_pagination_key: number | null;
}

/** Every error body: `{status: "error", code, message}` with a stable snake_case `code`. */
export type ErrorBody = Static<typeof ErrorResponse>;
