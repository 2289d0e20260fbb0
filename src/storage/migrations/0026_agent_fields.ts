import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 26: a delivery to an agent's `webhook_url` carries the agent's `webhook_timeout_ms` (the
 * attempt's timeout, capped at WEBHOOK_TIMEOUT_MS when sent); null elsewhere: the server's timeout.
 */
export const agentFields = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('webhook_deliveries').addColumn('timeout_ms', 'integer').execute();
  },
});
