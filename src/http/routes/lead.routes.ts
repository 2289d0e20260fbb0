import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { LeadCreateBody, LeadResponse, LeadUpdateBody, type LeadService } from '../../services/lead.service.ts';
import { TicketCreateBody, TicketResponse, type TicketService } from '../../services/ticket.service.ts';
import { Nullable } from '../../domain/schema-kit.ts';
import { authErrors, named } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';
import { LeadGetQuery, PageQuery, TicketListQuery } from '../schemas/webhook.schemas.ts';

const optionalNumber = (text: string | undefined) => (text === undefined ? undefined : Number(text));

/** Leads (contacts) and tickets, under /api/v1/; their changes are webhook events. */
export function leadRoutes(leads: LeadService, tickets: TicketService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const tags = ['leads'] as const satisfies ['leads'];
    app.post('/api/v1/leads/create.php', {
      schema: operation({ operationId: 'createLead', tags, summary: 'Create a lead (emits lead.created)', body: named(LeadCreateBody, 'CreateLeadRequest'), response: { 201: LeadResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await leads.createLead(request.principal.accountId, request.body)));

    app.post('/api/v1/leads/update.php', {
      schema: operation({
        operationId: 'updateLead',
        tags,
        summary: 'Update a lead (emits lead.updated when something changed)',
        description: 'Fields given replace the stored ones; `custom_fields` is replaced as a whole; `email`/`notes` null clears them.',
        body: named(LeadUpdateBody, 'UpdateLeadRequest'),
        response: { 200: LeadResponse, ...authErrors },
      }),
    }, async (request) => leads.updateLead(request.principal.accountId, request.body));

    app.get('/api/v1/leads/get.php', {
      schema: operation({ operationId: 'getLead', tags, summary: 'Get a lead', querystring: LeadGetQuery, response: { 200: LeadResponse, ...authErrors } }),
    }, async (request) => leads.getLead(request.principal.accountId, Number(request.query.id)));

    app.get('/api/v1/leads/list.php', {
      schema: operation({
        operationId: 'listLeads',
        tags,
        summary: 'List leads, newest first',
        querystring: PageQuery,
        response: { 200: Type.Object({ leads: Type.Array(LeadResponse), next_pagination_key: Nullable(Type.Integer()) }, { title: 'LeadPage' }), ...authErrors },
      }),
    }, async (request) =>
      leads.listLeads(request.principal.accountId, {
        limit: optionalNumber(request.query.limit),
        pagination_key: optionalNumber(request.query.pagination_key),
      }));

    app.post('/api/v1/tickets/create.php', {
      schema: operation({ operationId: 'createTicket', tags: ['tickets'], summary: 'Create a ticket (emits ticket.created)', body: named(TicketCreateBody, 'CreateTicketRequest'), response: { 201: TicketResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await tickets.createTicket(request.principal.accountId, request.body)));

    app.get('/api/v1/tickets/list.php', {
      schema: operation({
        operationId: 'listTickets',
        tags: ['tickets'],
        summary: 'List tickets, newest first',
        querystring: TicketListQuery,
        response: { 200: Type.Object({ tickets: Type.Array(TicketResponse), next_pagination_key: Nullable(Type.Integer()) }, { title: 'TicketPage' }), ...authErrors },
      }),
    }, async (request) =>
      tickets.listTickets(request.principal.accountId, {
        limit: optionalNumber(request.query.limit),
        pagination_key: optionalNumber(request.query.pagination_key),
        lead_id: optionalNumber(request.query.lead_id),
      }));
  };
}
