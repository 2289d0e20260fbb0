import { Type, type Static } from '@sinclair/typebox';
import type { Clock } from '../lib/clock.ts';
import { errors } from '../domain/errors.ts';
import { Nullable, ResourceId, Strict, Text } from '../domain/schema-kit.ts';
import type { Store } from '../storage/store.ts';
import type { Ticket, TicketRepository } from '../storage/ticket.repository.ts';
import { TICKET_PRIORITIES, TICKET_STATUSES } from '../domain/ticket.ts';
import type { EventOutbox } from './events.ts';
import { RecordId, check } from './lead.service.ts';

export const TicketCreateBody = Strict({
  subject: Type.String({ minLength: 1, maxLength: 512 }),
  description: Text(20_000),
  priority: Type.Optional(Type.Union(TICKET_PRIORITIES.map((p) => Type.Literal(p)))),
  lead_id: Type.Optional(Nullable(RecordId)),
  call_id: Type.Optional(Nullable(ResourceId)),
});
export type TicketCreateInput = Static<typeof TicketCreateBody>;

export const TicketResponse = Type.Object(
  {
    id: Type.Integer(),
    subject: Type.String(),
    description: Type.String(),
    priority: Type.Union(TICKET_PRIORITIES.map((p) => Type.Literal(p))),
    status: Type.Union(TICKET_STATUSES.map((s) => Type.Literal(s))),
    lead_id: Nullable(Type.Integer()),
    call_id: Nullable(Type.String()),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    updated_at: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'Ticket' },
);
export type TicketView = Static<typeof TicketResponse>;

export interface TicketServiceDeps {
  store: Store;
  tickets: TicketRepository;
  outbox: EventOutbox;
  clock: Clock;
}

/** Support tickets: created by the API or a flow's create_ticket node; creation is an event. */
export class TicketService {
  readonly #d: TicketServiceDeps;

  constructor(deps: TicketServiceDeps) {
    this.#d = deps;
  }

  /**
   * Creates an open ticket and records `ticket.created` in the same transaction. `lead_id` and
   * `call_id` must name a lead and a call of the same account (else 422).
   */
  async createTicket(accountId: string, fields: TicketCreateInput): Promise<TicketView> {
    check(TicketCreateBody, fields);
    const now = this.#d.clock.now();
    return this.#d.store.transaction(async (tx) => {
      const leadId = fields.lead_id ?? null;
      const callId = fields.call_id ?? null;
      if (leadId !== null && !(await this.#d.tickets.leadExists(accountId, leadId, tx))) throw errors.leadNotFound(leadId);
      if (callId !== null && !(await this.#d.tickets.callExists(accountId, callId, tx))) throw errors.callNotFound(callId);
      const row = await this.#d.tickets.insert(
        {
          account_id: accountId,
          subject: fields.subject,
          description: fields.description,
          priority: fields.priority ?? 'normal',
          status: 'open',
          lead_id: leadId,
          call_id: callId,
          created_at: now,
          updated_at: now,
        },
        tx,
      );
      const ticket = toTicketView(row);
      await this.#d.outbox.record(tx, { accountId, kind: 'ticket.created', data: { ...ticket } });
      return ticket;
    });
  }

  /** Newest first; `pagination_key` is the id of the last ticket of the previous page. */
  async listTickets(accountId: string, options: { limit?: number; pagination_key?: number; lead_id?: number }) {
    const limit = options.limit ?? 50;
    const rows = await this.#d.tickets.list(accountId, { limit, before: options.pagination_key, leadId: options.lead_id });
    const last = rows.at(-1);
    return { tickets: rows.map(toTicketView), next_pagination_key: rows.length === limit && last ? last.id : null };
  }
}

/** The ticket as the API answers it and events carry it. */
export function toTicketView(row: Ticket): TicketView {
  return {
    id: Number(row.id),
    subject: row.subject,
    description: row.description,
    priority: row.priority,
    status: row.status,
    lead_id: row.lead_id === null ? null : Number(row.lead_id),
    call_id: row.call_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
