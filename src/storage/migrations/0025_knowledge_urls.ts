import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 29: a knowledge base's `enable_auto_refresh` (Retell's field: its URL sources are fetched
 * again periodically), stored as 0/1, and the index the refresh finds due URL sources by.
 */
export const knowledgeUrls = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('knowledge_bases').addColumn('auto_refresh', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.createIndex('knowledge_base_sources_refresh').on('knowledge_base_sources').columns(['type', 'status', 'updated_at']).execute();
  },
});
