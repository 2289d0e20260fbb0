import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Issue 29, hybrid retrieval: a chunk's vector when an embeddings endpoint is configured (float32
 * values, little-endian, of unit length) and the model that made it, so vectors of another model
 * are never compared with a query's. Null for chunks ingested without embeddings. Searched in the
 * process (src/storage/knowledge-vectors.ts) on both stores.
 */
export const knowledgeEmbeddings = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('knowledge_base_chunks').addColumn('embedding', dialect === 'postgres' ? 'bytea' : 'blob').execute();
    await db.schema.alterTable('knowledge_base_chunks').addColumn('embedding_model', 'text').execute();
  },
});
