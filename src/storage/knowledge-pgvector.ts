/**
 * The knowledge bases' vector search in PostgreSQL itself, where the server has pgvector (issue
 * 29, docs/knowledge-bases.md). Hybrid retrieval ranks chunks by their vectors' cosine similarity
 * to the query's; with pgvector that ranking is one query in the database, and without it the
 * process scans the vectors itself (knowledge-vectors.ts). The fusion with the lexical ranking is
 * the same either way (KnowledgeService).
 *
 * Whether pgvector is used is found once per process (`detectPgvector`): the `vector` extension
 * must be available on the server (`pg_available_extensions`) and created in the database, or
 * creatable by our role. A server without it, or a role that may not create it, keeps the search
 * in the process: nothing fails.
 *
 * The vectors: a `embedding_vector vector` column beside the chunk's `embedding` bytes (which stay,
 * so the search in the process and a server without pgvector keep working on the same rows). The
 * column has no fixed dimension, so a base whose embeddings change dimension (another model, or
 * the same model asked for fewer dimensions) holds both while it is re-embedded; a search compares
 * only vectors of its query's model and dimension. It is added when pgvector is found, not by a
 * migration, because the extension can be installed on the server after the migrations ran. Chunks
 * embedded before then are given their vectors at that detection (`backfill`).
 *
 * The search is exact (no approximate index): see `nearestInDatabase` for why, and BENCHMARKS.md
 * for the measurement.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';
import type { Executor } from './store.ts';
import type { Neighbour } from './knowledge-vectors.ts';
import { readVector } from '../lib/vectors.ts';

/** Which vector search the PostgreSQL store uses, and why not pgvector when it does not. */
export type VectorSearch = { search: 'pgvector'; version: string } | { search: 'in_process'; reason: string };

/** Chunks given their vector per statement when backfilling. */
const BACKFILL_ROWS = 500;

/**
 * Finds whether this database can search vectors with pgvector and, when it can, makes it ready:
 * the extension created (when available and not yet created), the vector column added, and the
 * chunks embedded before it given their vectors. Never throws for a server without pgvector or a
 * role without the right to create it; other errors (the database unreachable) are thrown.
 */
export async function detectPgvector(db: Executor): Promise<VectorSearch> {
  const available = await sql<{ default_version: string; installed_version: string | null }>`
    select default_version, installed_version from pg_available_extensions where name = 'vector'`.execute(db);
  const extension = available.rows[0];
  if (!extension) return { search: 'in_process', reason: 'the PostgreSQL server has no vector extension (pgvector)' };
  let version = extension.installed_version;
  if (version === null) {
    try {
      await sql`create extension if not exists vector`.execute(db);
    } catch (error) {
      // Another server may have created it meanwhile (a unique violation): then it is there.
      const again = await sql<{ installed_version: string | null }>`select installed_version from pg_available_extensions where name = 'vector'`.execute(db);
      if (!again.rows[0]?.installed_version) return { search: 'in_process', reason: `the vector extension is available but could not be created: ${describe(error)}` };
    }
    const created = await sql<{ installed_version: string }>`select installed_version from pg_available_extensions where name = 'vector'`.execute(db);
    version = created.rows[0]?.installed_version ?? extension.default_version;
  }
  const column = await sql`
    select 1 from information_schema.columns
    where table_schema = current_schema() and table_name = 'knowledge_base_chunks' and column_name = 'embedding_vector'`.execute(db);
  // ALTER TABLE locks the table even when the column exists: only when it is missing.
  if (column.rows.length === 0) await sql`alter table knowledge_base_chunks add column if not exists embedding_vector vector`.execute(db);
  await backfill(db);
  return { search: 'pgvector', version };
}

/**
 * Which vector search a server would use on this database, found without changing anything (for
 * `cli doctor`): what `detectPgvector` would find at the server's start, without creating the
 * extension or the column. pgvector when the extension is created in the database, or available on
 * the server and creatable by our role (a superuser, or a trusted extension and the right to
 * create in the database); the search in the process otherwise, with the reason.
 */
export async function inspectPgvector(db: Executor): Promise<VectorSearch> {
  const available = await sql<{ default_version: string; installed_version: string | null }>`
    select default_version, installed_version from pg_available_extensions where name = 'vector'`.execute(db);
  const extension = available.rows[0];
  if (!extension) return { search: 'in_process', reason: 'the PostgreSQL server has no vector extension (pgvector)' };
  if (extension.installed_version !== null) return { search: 'pgvector', version: extension.installed_version };
  const role = await sql<{ superuser: boolean; may_create: boolean; trusted: boolean | null }>`
    select (select rolsuper from pg_roles where rolname = current_user) as superuser,
      has_database_privilege(current_database(), 'CREATE') as may_create,
      (select trusted from pg_available_extension_versions where name = 'vector' and version = ${extension.default_version}) as trusted`.execute(db);
  const { superuser, may_create: mayCreate, trusted } = role.rows[0] ?? { superuser: false, may_create: false, trusted: false };
  if (superuser || (trusted === true && mayCreate)) return { search: 'pgvector', version: extension.default_version };
  return {
    search: 'in_process',
    reason: `the vector extension ${extension.default_version} is available but not created in this database, and this role may not create it (not a superuser, and ${trusted === true ? 'no CREATE right on the database' : 'the extension is not trusted'}): run "create extension vector" in it as a superuser`,
  };
}

/**
 * `inspectPgvector` on the PostgreSQL database at `databaseUrl`, over one connection of its own
 * opened for it (no migration is applied), each step bounded by `timeoutMs`.
 */
export async function inspectVectorSearch(databaseUrl: string, timeoutMs: number): Promise<VectorSearch> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    return await inspectPgvector(db);
  } finally {
    await db.destroy();
  }
}

/** Gives every chunk that has an embedding but no vector its vector, a page at a time. */
async function backfill(db: Executor): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ id: number; embedding: Uint8Array }>`
      select id, embedding from knowledge_base_chunks
      where embedding is not null and embedding_vector is null
      order by id limit ${BACKFILL_ROWS}`.execute(db);
    if (rows.length === 0) return;
    const values = rows.map((row) => sql`(${Number(row.id)}::bigint, ${vectorLiteral(bytesToVector(row.embedding))}::vector)`);
    await sql`
      update knowledge_base_chunks c set embedding_vector = v.vector
      from (values ${sql.join(values)}) as v(id, vector)
      where c.id = v.id and c.embedding_vector is null`.execute(db);
    if (rows.length < BACKFILL_ROWS) return;
  }
}

/**
 * The `limit` chunks of the bases whose vectors of `model` are nearest `query` (of unit length),
 * nearest first (ties: the lower id first), ranked by pgvector's cosine distance in the database.
 * `similarity` is 1 - distance.
 *
 * Exact, on purpose: the rows are found by the chunks' knowledge-base index and only the bases
 * searched are scanned, so the cost is that of the bases' own chunks (BENCHMARKS.md, 10,000 chunks).
 * An approximate index (HNSW, IVFFlat) is built over the whole table, and a search filtered to a
 * few bases out of many would walk the graph past other accounts' chunks and could return fewer
 * than `limit` of its own (pgvector's iterative scans mitigate this, per session setting); it pays
 * only for single bases far larger than the bounds allow (KNOWLEDGE_LIMITS: 20,000 chunks a base).
 */
export async function nearestInDatabase(db: Executor, baseIds: readonly string[], model: string, query: Float32Array, limit: number): Promise<Neighbour[]> {
  const { rows } = await sql<{ id: number; distance: number }>`
    select id, embedding_vector <=> ${vectorLiteral(query)}::vector as distance
    from knowledge_base_chunks
    where knowledge_base_id = any(${[...baseIds]}) and embedding_model = ${model}
      and embedding_vector is not null and vector_dims(embedding_vector) = ${query.length}
    order by distance, id limit ${limit}`.execute(db);
  return rows.map((row) => ({ id: Number(row.id), similarity: 1 - Number(row.distance) }));
}

/**
 * A vector as pgvector reads it: `[x,y,...]`. Each float32 value is written as the shortest
 * decimal that reads back as the same double, so pgvector's float parsing gives the same float32.
 */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector, (x) => String(x)).join(',')}]`;
}

function bytesToVector(bytes: Uint8Array): Float32Array {
  const vector = new Float32Array(bytes.byteLength / 4);
  readVector(bytes, vector.length, vector, 0);
  return vector;
}

/** An error as a reason, without anything but PostgreSQL's code and message. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (SQLSTATE ${code})` : error.message;
  }
  return String(error);
}
