import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { Database } from './schema.ts';
import type { Dialect } from './store.ts';
import type { LeadTable } from './tables/webhook.tables.ts';

export type LeadRow = Selectable<LeadTable>;
export type LeadChanges = Updateable<LeadTable>;

/** Leads (contacts) of an account; integer ids. */
export class LeadRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: Dialect;
  constructor(db: Kysely<Database>, dialect: Dialect) {
    this.#db = db;
    this.#dialect = dialect;
  }

  async insert(row: Insertable<LeadTable>, db: Kysely<Database> = this.#db): Promise<LeadRow> {
    return db.insertInto('leads').values(row).returningAll().executeTakeFirstOrThrow();
  }

  async find(accountId: string, id: number, db: Kysely<Database> = this.#db): Promise<LeadRow | undefined> {
    return db.selectFrom('leads').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  /** Reads a lead for a read-modify-write in `db`'s transaction (row-locked on PostgreSQL). */
  async findForUpdate(accountId: string, id: number, db: Kysely<Database>): Promise<LeadRow | undefined> {
    let query = db.selectFrom('leads').selectAll().where('id', '=', id).where('account_id', '=', accountId);
    if (this.#dialect === 'postgres') query = query.forUpdate();
    return query.executeTakeFirst();
  }

  async update(id: number, changes: LeadChanges, db: Kysely<Database> = this.#db): Promise<void> {
    await db.updateTable('leads').set(changes).where('id', '=', id).execute();
  }

  /** Newest first; `before` continues after that id. */
  async list(accountId: string, limit: number, before?: number): Promise<LeadRow[]> {
    let query = this.#db.selectFrom('leads').selectAll().where('account_id', '=', accountId);
    if (before !== undefined) query = query.where('id', '<', before);
    return query.orderBy('id', 'desc').limit(limit).execute();
  }
}
