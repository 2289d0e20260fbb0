import type { Insertable, Selectable } from 'kysely';
import type { Executor } from './store.ts';
import type { TicketTable } from './tables/webhook.tables.ts';

/** A ticket as stored. */
export type Ticket = Selectable<TicketTable>;
/** A ticket to insert; its id is generated. */
export type NewTicket = Insertable<TicketTable>;

/** Support tickets of an account; integer ids. */
export class TicketRepository {
  readonly #db: Executor;
  constructor(db: Executor) {
    this.#db = db;
  }

  async insert(ticket: NewTicket, db: Executor = this.#db): Promise<Ticket> {
    return db.insertInto('tickets').values(ticket).returningAll().executeTakeFirstOrThrow();
  }

  /** Newest first; `before` continues after that id; optionally one lead's tickets. */
  async list(accountId: string, options: { limit: number; before?: number; leadId?: number }): Promise<Ticket[]> {
    let query = this.#db.selectFrom('tickets').selectAll().where('account_id', '=', accountId);
    if (options.before !== undefined) query = query.where('id', '<', options.before);
    if (options.leadId !== undefined) query = query.where('lead_id', '=', options.leadId);
    return query.orderBy('id', 'desc').limit(options.limit).execute();
  }

  /** Whether the call exists under the account (a ticket may name the call it came from). */
  async callExists(accountId: string, callId: string, db: Executor = this.#db): Promise<boolean> {
    const row = await db.selectFrom('calls').select('call_id').where('call_id', '=', callId).where('account_id', '=', accountId).executeTakeFirst();
    return row !== undefined;
  }

  async leadExists(accountId: string, leadId: number, db: Executor = this.#db): Promise<boolean> {
    const row = await db.selectFrom('leads').select('id').where('id', '=', leadId).where('account_id', '=', accountId).executeTakeFirst();
    return row !== undefined;
  }
}
