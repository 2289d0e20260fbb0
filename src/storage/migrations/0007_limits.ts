import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Limits that hold across servers (issue 12): an account's concurrency limit (null: none), the
 * shared create-web-call token buckets of PostgreSQL servers (one row per account), and an index
 * of the calls that count against the concurrency limit (registered or ongoing) only.
 */
export const limits = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('accounts').addColumn('concurrency_limit', 'integer').execute();
    await db.schema
      .createTable('rate_buckets')
      .addColumn('account_id', 'text', (c) => c.primaryKey())
      .addColumn('tokens', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('calls_live')
      .on('calls')
      .column('account_id')
      .where(sql.ref('call_status'), 'in', [sql.lit('registered'), sql.lit('ongoing')])
      .execute();
  },
});
