import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 26. `agent_version_notes`: what Retell's version operations say of an agent version
 * beside its immutable settings: the version it was made from (create-agent-version), and when it
 * was published, with a title and description (publish-agent-version). Rows go with their version.
 *
 * `calls_account_agent_created`: list-calls by agent (Retell SDK 5's `agent` filter and the old `agent_id`). Without it
 * a list of one agent's calls walks every call of the account in `calls_account_created` and
 * drops the other agents' (EXPLAIN on both stores); with it the agent's calls are read in the
 * list's order, versions filtered on the index.
 */
export const retell = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('agent_version_notes')
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('base_version', 'integer')
      .addColumn('published_at', 'bigint')
      .addColumn('version_title', 'text')
      .addColumn('version_description', 'text')
      .addPrimaryKeyConstraint('agent_version_notes_pk', ['agent_id', 'version'])
      .addForeignKeyConstraint('agent_version_notes_version', ['agent_id', 'version'], 'agent_versions', ['agent_id', 'version'], (fk) => fk.onDelete('cascade'))
      .execute();
    await db.schema.createIndex('calls_account_agent_created').on('calls').columns(['account_id', 'agent_id', 'created_at', 'call_id']).execute();
  },
});
