import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 26: list-calls by agent (Retell SDK 5's `agent` filter and the old `agent_id`). Without it
 * a list of one agent's calls walks every call of the account in `calls_account_created` and
 * drops the other agents' (EXPLAIN on both stores); with it the agent's calls are read in the
 * list's order, versions filtered on the index.
 */
export const retell = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('calls_account_agent_created').on('calls').columns(['account_id', 'agent_id', 'created_at', 'call_id']).execute();
  },
});
