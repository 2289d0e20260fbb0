import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Issue 29: knowledge bases, their sources (the bytes as given, kept until the source is deleted)
 * and the chunks retrieval searches. Lexical search is the store's own: an FTS5 table over the
 * chunks on SQLite (kept by triggers, Porter stemming), a stored tsvector with a GIN index on
 * PostgreSQL (English configuration). Deleting a knowledge base or a source deletes its rows
 * explicitly, as elsewhere in the schema.
 */
export const knowledgeBases = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('knowledge_bases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('knowledge_bases_account').on('knowledge_bases').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('knowledge_base_sources')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('knowledge_base_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('format', 'text', (c) => c.notNull())
      .addColumn('url', 'text')
      .addColumn('body', dialect === 'postgres' ? 'bytea' : 'blob')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('chunk_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('knowledge_base_sources_base').on('knowledge_base_sources').columns(['knowledge_base_id', 'id']).execute();
    await db.schema.createIndex('knowledge_base_sources_status').on('knowledge_base_sources').columns(['status']).execute();

    let chunks = db.schema.createTable('knowledge_base_chunks');
    chunks =
      dialect === 'postgres'
        ? chunks.addColumn('id', 'bigserial', (c) => c.primaryKey())
        : chunks.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
    chunks = chunks
      .addColumn('knowledge_base_id', 'text', (c) => c.notNull())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('heading', 'text', (c) => c.notNull())
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('words', 'integer', (c) => c.notNull());
    if (dialect === 'postgres') {
      // Headings weigh more than body text (weights B and D of ts_rank).
      chunks = chunks.addColumn('search', sql`tsvector`, (c) =>
        c.generatedAlwaysAs(sql`setweight(to_tsvector('english', heading), 'B') || setweight(to_tsvector('english', text), 'D')`).stored(),
      );
    }
    await chunks.execute();
    await db.schema.createIndex('knowledge_base_chunks_base').on('knowledge_base_chunks').columns(['knowledge_base_id', 'source_id', 'position']).execute();
    await db.schema.createIndex('knowledge_base_chunks_source').on('knowledge_base_chunks').columns(['source_id']).execute();

    if (dialect === 'postgres') {
      await sql`create index knowledge_base_chunks_search on knowledge_base_chunks using gin (search)`.execute(db);
    } else {
      // The knowledge base's id is an unindexed column of the index, so a search filters on it
      // through the join to the chunks; heading and text are searched with BM25 (bm25()).
      await sql`create virtual table knowledge_base_chunks_fts using fts5(heading, text, content='knowledge_base_chunks', content_rowid='id', tokenize='porter unicode61')`.execute(db);
      await sql`create trigger knowledge_base_chunks_ai after insert on knowledge_base_chunks begin
        insert into knowledge_base_chunks_fts(rowid, heading, text) values (new.id, new.heading, new.text);
      end`.execute(db);
      await sql`create trigger knowledge_base_chunks_ad after delete on knowledge_base_chunks begin
        insert into knowledge_base_chunks_fts(knowledge_base_chunks_fts, rowid, heading, text) values ('delete', old.id, old.heading, old.text);
      end`.execute(db);
    }
  },
});
