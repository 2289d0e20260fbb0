import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Call leases (issue 12): the server holding an ongoing call renews its lease; a call whose lease
 * lapses is ended by another server (or, on the embedded store, by the next start) from the
 * lease's checkpoint. Calls ongoing when this migration runs get a lease that has already lapsed:
 * no server holding them knows about leases, so they are ended by the first sweep.
 */
export const leases = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('call_leases')
      .addColumn('call_id', 'text', (c) => c.primaryKey())
      .addColumn('server_id', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('checkpoint', 'text')
      .execute();
    await db.schema.createIndex('call_leases_expires').on('call_leases').column('expires_at').execute();
    await db
      .insertInto('call_leases')
      .columns(['call_id', 'server_id', 'expires_at'])
      .expression(db.selectFrom('calls').select(['call_id', sql.lit('before-leases').as('server_id'), sql.lit(0).as('expires_at')]).where('call_status', '=', 'ongoing'))
      .execute();
  },
});
