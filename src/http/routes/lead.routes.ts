import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { LeadCreateBody, LeadResponse, LeadUpdateBody, type LeadService } from '../../services/lead.service.ts';
import { TicketCreateBody, TicketResponse, type TicketService } from '../../services/ticket.service.ts';
import { Nullable } from '../../domain/schema-kit.ts';
import { authErrors } from '../schemas/common.schemas.ts';
import { LeadGetQuery, PageQuery, TicketListQuery } from '../schemas/webhook.schemas.ts';

const security = [{ apiKey: [] }];
const optionalNumber = (text: string | undefined) => (text === undefined ? undefined : Number(text));

/** Leads (contacts) and tickets, under /api/v1/; their changes are webhook events. */
export function leadRoutes(leads: LeadService, tickets: TicketService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const tags = ['leads'];
    app.post('/api/v1/leads/create.php', {
      schema: { tags, security, summary: 'Create a lead (emits lead.created)', body: LeadCreateBody, response: { 201: LeadResponse, ...authErrors } },
    }, async (request, reply) => reply.code(201).send(await leads.createLead(request.principal.accountId, request.body)));

    app.post('/api/v1/leads/update.php', {
      schema: {
        tags,
        security,
        summary: 'Update a lead (emits lead.updated when something changed)',
        description: 'Fields given replace the stored ones; `custom_fields` is replaced as a whole; `email`/`notes` null clears them.',
        body: LeadUpdateBody,
        response: { 200: LeadResponse, ...authErrors },
      },
    }, async (request) => leads.updateLead(request.principal.accountId, request.body));

    app.get('/api/v1/leads/get.php', {
      schema: { tags, security, summary: 'Get a lead', querystring: LeadGetQuery, response: { 200: LeadResponse, ...authErrors } },
    }, async (request) => leads.getLead(request.principal.accountId, Number(request.query.id)));

    app.get('/api/v1/leads/list.php', {
      schema: {
        tags,
        security,
        summary: 'List leads, newest first',
        querystring: PageQuery,
        response: { 200: Type.Object({ leads: Type.Array(LeadResponse), next_pagination_key: Nullable(Type.Integer()) }), ...authErrors },
      },
    }, async (request) =>
      leads.listLeads(request.principal.accountId, {
        limit: optionalNumber(request.query.limit),
        pagination_key: optionalNumber(request.query.pagination_key),
      }));

    app.post('/api/v1/tickets/create.php', {
      schema: { tags: ['tickets'], security, summary: 'Create a ticket (emits ticket.created)', body: TicketCreateBody, response: { 201: TicketResponse, ...authErrors } },
    }, async (request, reply) => reply.code(201).send(await tickets.createTicket(request.principal.accountId, request.body)));

    app.get('/api/v1/tickets/list.php', {
      schema: {
        tags: ['tickets'],
        security,
        summary: 'List tickets, newest first',
        querystring: TicketListQuery,
        response: { 200: Type.Object({ tickets: Type.Array(TicketResponse), next_pagination_key: Nullable(Type.Integer()) }), ...authErrors },
      },
    }, async (request) =>
      tickets.listTickets(request.principal.accountId, {
        limit: optionalNumber(request.query.limit),
        pagination_key: optionalNumber(request.query.pagination_key),
        lead_id: optionalNumber(request.query.lead_id),
      }));
  };
}
