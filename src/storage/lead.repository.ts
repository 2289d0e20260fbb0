import type { Insertable, Selectable, Updateable } from 'kysely';
import type { LeadCustomFields } from '../domain/lead.ts';
import { decodeJsonOrNull, encodeJsonOrNull } from './json-column.ts';
import type { Dialect, Executor } from './store.ts';
import type { LeadTable } from './tables/webhook.tables.ts';

type LeadRow = Selectable<LeadTable>;

/** A lead as stored, its `custom_fields` decoded (null when none were ever stored). */
export interface Lead extends Omit<LeadRow, 'custom_fields'> {
  custom_fields: LeadCustomFields | null;
}
/** A lead to insert; its id is generated. */
export interface NewLead extends Omit<Insertable<LeadTable>, 'custom_fields'> {
  custom_fields?: LeadCustomFields | null;
}
/** Columns of a lead to change; `custom_fields` replaces the whole object. */
export interface LeadChanges extends Omit<Updateable<LeadTable>, 'custom_fields'> {
  custom_fields?: LeadCustomFields | null;
}

function decodeLead(row: LeadRow): Lead {
  return { ...row, custom_fields: decodeJsonOrNull(row.custom_fields) };
}

/** Leads (contacts) of an account; integer ids. */
export class LeadRepository {
  readonly #db: Executor;
  readonly #dialect: Dialect;
  constructor(db: Executor, dialect: Dialect) {
    this.#db = db;
    this.#dialect = dialect;
  }

  async insert(lead: NewLead, db: Executor = this.#db): Promise<Lead> {
    const { custom_fields, ...rest } = lead;
    const row = await db
      .insertInto('leads')
      .values({ ...rest, custom_fields: encodeJsonOrNull(custom_fields) })
      .returningAll()
      .executeTakeFirstOrThrow();
    return decodeLead(row);
  }

  async find(accountId: string, id: number, db: Executor = this.#db): Promise<Lead | undefined> {
    const row = await db.selectFrom('leads').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && decodeLead(row);
  }

  /** Reads a lead for a read-modify-write in `db`'s transaction (row-locked on PostgreSQL). */
  async findForUpdate(accountId: string, id: number, db: Executor): Promise<Lead | undefined> {
    let query = db.selectFrom('leads').selectAll().where('id', '=', id).where('account_id', '=', accountId);
    if (this.#dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row && decodeLead(row);
  }

  async update(id: number, changes: LeadChanges, db: Executor = this.#db): Promise<void> {
    const { custom_fields, ...rest } = changes;
    await db
      .updateTable('leads')
      .set(custom_fields === undefined ? rest : { ...rest, custom_fields: encodeJsonOrNull(custom_fields) })
      .where('id', '=', id)
      .execute();
  }

  /** Newest first; `before` continues after that id. */
  async list(accountId: string, limit: number, before?: number): Promise<Lead[]> {
    let query = this.#db.selectFrom('leads').selectAll().where('account_id', '=', accountId);
    if (before !== undefined) query = query.where('id', '<', before);
    const rows = await query.orderBy('id', 'desc').limit(limit).execute();
    return rows.map(decodeLead);
  }
}
