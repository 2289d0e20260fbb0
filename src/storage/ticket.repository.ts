import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database } from './schema.ts';
import type { TicketTable } from './tables/webhook.tables.ts';

export type TicketRow = Selectable<TicketTable>;

/** Support tickets of an account; integer ids. */
export class TicketRepository {
  readonly #db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insert(row: Insertable<TicketTable>, db: Kysely<Database> = this.#db): Promise<TicketRow> {
    return db.insertInto('tickets').values(row).returningAll().executeTakeFirstOrThrow();
  }

  /** Newest first; `before` continues after that id; optionally one lead's tickets. */
  async list(accountId: string, options: { limit: number; before?: number; leadId?: number }): Promise<TicketRow[]> {
    let query = this.#db.selectFrom('tickets').selectAll().where('account_id', '=', accountId);
    if (options.before !== undefined) query = query.where('id', '<', options.before);
    if (options.leadId !== undefined) query = query.where('lead_id', '=', options.leadId);
    return query.orderBy('id', 'desc').limit(options.limit).execute();
  }

  /** Whether the call exists under the account (a ticket may name the call it came from). */
  async callExists(accountId: string, callId: string, db: Kysely<Database> = this.#db): Promise<boolean> {
    const row = await db.selectFrom('calls').select('call_id').where('call_id', '=', callId).where('account_id', '=', accountId).executeTakeFirst();
    return row !== undefined;
  }

  async leadExists(accountId: string, leadId: number, db: Kysely<Database> = this.#db): Promise<boolean> {
    const row = await db.selectFrom('leads').select('id').where('id', '=', leadId).where('account_id', '=', accountId).executeTakeFirst();
    return row !== undefined;
  }
}
