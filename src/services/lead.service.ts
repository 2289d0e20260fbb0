import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Clock } from '../lib/clock.ts';
import { errors } from '../domain/errors.ts';
import { Name, Nullable, Strict, Text } from '../domain/schema-kit.ts';
import type { Lead, LeadChanges, LeadRepository } from '../storage/lead.repository.ts';
import type { Store } from '../storage/store.ts';
import type { EventOutbox } from './events.ts';

/** A phone number as people write it: digits, spaces, + ( ) . - ; 3 to 32 characters. */
export const Phone = Type.String({ minLength: 3, maxLength: 32, pattern: '^\\+?[0-9 ().\\-]*[0-9][0-9 ().\\-]*$' });
export const Email = Type.String({ maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$' });
export const CustomFields = Type.Record(
  Type.String({ minLength: 1, maxLength: 128 }),
  Type.Union([Type.String({ maxLength: 4096 }), Type.Number(), Type.Boolean()]),
  { maxProperties: 50 },
);
/** Integer ids of leads and tickets. */
export const RecordId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

export const LeadCreateBody = Strict({
  name: Name(256),
  phone: Phone,
  email: Type.Optional(Nullable(Email)),
  notes: Type.Optional(Nullable(Text(10_000))),
  custom_fields: Type.Optional(CustomFields),
});
export type LeadCreateInput = Static<typeof LeadCreateBody>;

export const LeadUpdateBody = Strict({
  id: RecordId,
  name: Type.Optional(Name(256)),
  phone: Type.Optional(Phone),
  email: Type.Optional(Nullable(Email)),
  notes: Type.Optional(Nullable(Text(10_000))),
  /** Replaces the whole object. */
  custom_fields: Type.Optional(CustomFields),
});
export type LeadUpdateInput = Static<typeof LeadUpdateBody>;

export const LeadResponse = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    phone: Type.String(),
    email: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    custom_fields: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
    call_id: Nullable(Type.String()),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    updated_at: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'Lead' },
);
export type LeadView = Static<typeof LeadResponse>;

const UPDATABLE = ['name', 'phone', 'email', 'notes', 'custom_fields'] as const;

export interface LeadServiceDeps {
  store: Store;
  leads: LeadRepository;
  outbox: EventOutbox;
  clock: Clock;
}

/** Leads (contacts): created by the API or a flow's create_lead node; each change is an event. */
export class LeadService {
  readonly #d: LeadServiceDeps;

  constructor(deps: LeadServiceDeps) {
    this.#d = deps;
  }

  /**
   * Creates a lead and records `lead.created` in the same transaction. Fields are checked here as
   * well as at the HTTP edge, since a flow's create_lead node passes values from the conversation.
   */
  async createLead(accountId: string, fields: LeadCreateInput, options: { callId?: string | null } = {}): Promise<LeadView> {
    check(LeadCreateBody, fields);
    const now = this.#d.clock.now();
    return this.#d.store.transaction(async (tx) => {
      const row = await this.#d.leads.insert(
        {
          account_id: accountId,
          name: fields.name,
          phone: fields.phone,
          email: fields.email ?? null,
          notes: fields.notes ?? null,
          custom_fields: fields.custom_fields ?? {},
          call_id: options.callId ?? null,
          created_at: now,
          updated_at: now,
        },
        tx,
      );
      const lead = toLeadView(row);
      await this.#d.outbox.record(tx, { accountId, kind: 'lead.created', data: { ...lead } });
      return lead;
    });
  }

  /**
   * Updates the fields given; records `lead.updated` with the lead after the change and
   * `changed_fields`, only if something actually changed.
   */
  async updateLead(accountId: string, input: LeadUpdateInput): Promise<LeadView> {
    check(LeadUpdateBody, input);
    if (!UPDATABLE.some((field) => input[field] !== undefined)) {
      throw errors.invalidRequest(`give at least one field to change: ${UPDATABLE.join(', ')}`);
    }
    return this.#d.store.transaction(async (tx) => {
      const row = await this.#d.leads.findForUpdate(accountId, input.id, tx);
      if (!row) throw errors.leadNotFound(input.id);
      const before = toLeadView(row);
      const changed: string[] = [];
      const changes: LeadChanges = {};
      for (const field of UPDATABLE) {
        const value = input[field];
        if (value === undefined || JSON.stringify(value) === JSON.stringify(before[field])) continue;
        changed.push(field);
        Object.assign(changes, { [field]: value });
      }
      if (changed.length === 0) return before;
      changes.updated_at = Math.max(this.#d.clock.now(), row.updated_at);
      await this.#d.leads.update(row.id, changes, tx);
      const lead = toLeadView({ ...row, ...changes });
      await this.#d.outbox.record(tx, { accountId, kind: 'lead.updated', data: { ...lead, changed_fields: changed } });
      return lead;
    });
  }

  async getLead(accountId: string, id: number): Promise<LeadView> {
    const row = await this.#d.leads.find(accountId, id);
    if (!row) throw errors.leadNotFound(id);
    return toLeadView(row);
  }

  /** Newest first; `pagination_key` is the id of the last lead of the previous page. */
  async listLeads(accountId: string, options: { limit?: number; pagination_key?: number }) {
    const limit = options.limit ?? 50;
    const rows = await this.#d.leads.list(accountId, limit, options.pagination_key);
    const last = rows.at(-1);
    return { leads: rows.map(toLeadView), next_pagination_key: rows.length === limit && last ? last.id : null };
  }
}

/** The lead as the API answers it and events carry it. */
export function toLeadView(row: Lead): LeadView {
  return {
    id: Number(row.id),
    name: row.name,
    phone: row.phone,
    email: row.email,
    notes: row.notes,
    custom_fields: row.custom_fields ?? {},
    call_id: row.call_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Validates with the wire schema; the first problem becomes a 400 naming the field. */
export function check(schema: Parameters<typeof Value.Check>[0], value: unknown): void {
  if (Value.Check(schema, value)) return;
  const first = Value.Errors(schema, value).First();
  const where = first?.path ? first.path.replace(/^\//, '').replace(/\//g, '.') : 'body';
  throw errors.invalidRequest(`${where || 'body'}: ${first?.message ?? 'is invalid'}`);
}
