import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 28: a test run is held by the server playing it under a lease, as a call is, so a run whose
 * server was lost is finished by another (or at the next start) instead of staying `running`.
 * Runs recorded before this have no holder and a lease of 0: lapsed, so they are finished too.
 */
export const testRunLeases = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('test_runs').addColumn('holder', 'text').execute();
    await db.schema.alterTable('test_runs').addColumn('lease_expires_at', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.createIndex('test_runs_lease').on('test_runs').columns(['status', 'lease_expires_at']).execute();
  },
});
