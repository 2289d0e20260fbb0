import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Issue 29: on PostgreSQL, every change of a knowledge base's sources NOTIFYs `knowledge_changes`
 * with the base's id when it commits, so the servers of the store keep the bases' content stamps
 * between searches and read them again only when told (src/storage/knowledge-stamps.ts). A
 * trigger, so that no write path can change a base without telling. SQLite: nothing (its one
 * server reads the stamps in the process).
 */
export const knowledge = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      create function knowledge_sources_changed() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' then
          perform pg_notify('knowledge_changes', old.knowledge_base_id);
        else
          perform pg_notify('knowledge_changes', new.knowledge_base_id);
          if tg_op = 'UPDATE' and new.knowledge_base_id <> old.knowledge_base_id then
            perform pg_notify('knowledge_changes', old.knowledge_base_id);
          end if;
        end if;
        return null;
      end $$`.execute(db);
    await sql`
      create trigger knowledge_sources_changed after insert or update or delete on knowledge_base_sources
      for each row execute function knowledge_sources_changed()`.execute(db);
  },
});
