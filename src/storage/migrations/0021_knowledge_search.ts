import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Issue 29, retrieval speed (SQLite): the full-text index gains the chunk's knowledge base as an
 * indexed column, `base_key` (the 32 hex digits of its id, one token; a virtual generated column of
 * the chunks, so the external-content index reads it like the others and can be rebuilt), so a
 * search asks the index for the chunks of its bases (an intersection of posting lists) instead of
 * looking each matching chunk up in the table to test its base. Ranking gives the column no
 * weight. PostgreSQL's tsvector index is unchanged.
 *
 * On both stores, an index covering what identifies the bases' content (the search's stamp,
 * knowledge-term-stats.ts), so reading it never reads a source's bytes.
 */
export const knowledgeSearch = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('knowledge_base_sources_stamp').on('knowledge_base_sources').columns(['knowledge_base_id', 'updated_at', 'chunk_count']).execute();
    if (dialect === 'postgres') return;
    await sql`alter table knowledge_base_chunks add column base_key text generated always as (substr(knowledge_base_id, -32)) virtual`.execute(db);
    await sql`drop trigger knowledge_base_chunks_ai`.execute(db);
    await sql`drop trigger knowledge_base_chunks_ad`.execute(db);
    await sql`drop table knowledge_base_chunks_fts`.execute(db);
    await sql`create virtual table knowledge_base_chunks_fts using fts5(base_key, heading, text, content='knowledge_base_chunks', content_rowid='id', tokenize='porter unicode61')`.execute(db);
    await sql`insert into knowledge_base_chunks_fts(knowledge_base_chunks_fts) values ('rebuild')`.execute(db);
    await sql`create trigger knowledge_base_chunks_ai after insert on knowledge_base_chunks begin
      insert into knowledge_base_chunks_fts(rowid, base_key, heading, text) values (new.id, new.base_key, new.heading, new.text);
    end`.execute(db);
    await sql`create trigger knowledge_base_chunks_ad after delete on knowledge_base_chunks begin
      insert into knowledge_base_chunks_fts(knowledge_base_chunks_fts, rowid, base_key, heading, text) values ('delete', old.id, old.base_key, old.heading, old.text);
    end`.execute(db);
  },
});
