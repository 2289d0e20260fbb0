import type { ColumnType, Generated } from 'kysely';
import type { DocumentFormat, KnowledgeSourceType } from '../../domain/knowledge-base.ts';

/** Tables of knowledge bases (migration 0018). Times are epoch milliseconds. */

export interface KnowledgeBaseTable {
  id: string;
  account_id: string;
  name: string;
  /** `enable_auto_refresh`: 1 when its URL sources are fetched again periodically (migration 0025). */
  auto_refresh: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** Where a source stands: ingestion waiting or running, done, or failed with `error`. */
export type SourceStatus = 'in_progress' | 'complete' | 'error';

export interface KnowledgeSourceTable {
  id: string;
  knowledge_base_id: string;
  type: KnowledgeSourceType;
  /** A text's title, a file's name, or a URL. */
  title: string;
  /** The document's format; a URL's is guessed from its path when added and set from the response when fetched. */
  format: DocumentFormat;
  url: string | null;
  /** The document's bytes as given (a text's UTF-8); null for a URL until fetched. */
  body: Uint8Array | null;
  status: SourceStatus;
  /** Why ingestion failed, for the source's owner (no internals). */
  error: string | null;
  chunk_count: Generated<number>;
  created_at: number;
  updated_at: number;
}

export interface KnowledgeChunkTable {
  id: Generated<number>;
  knowledge_base_id: string;
  source_id: string;
  /** Its place in the source, from 0. */
  position: number;
  heading: string;
  text: string;
  words: number;
  /** Its vector, float32 little-endian of unit length (migration 0023); null when ingested without embeddings. */
  embedding: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  /** The model of `embedding`. */
  embedding_model: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * PostgreSQL with pgvector only (added at start-up, knowledge-pgvector.ts): `embedding` as a
   * pgvector `vector`, written as `'[x,y,...]'::vector`. Absent elsewhere: never select it there.
   */
  embedding_vector: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface KnowledgeTables {
  knowledge_bases: KnowledgeBaseTable;
  knowledge_base_sources: KnowledgeSourceTable;
  knowledge_base_chunks: KnowledgeChunkTable;
}
