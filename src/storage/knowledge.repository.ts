import { sql, type Selectable } from 'kysely';
import type { DocumentFormat, RetrievedChunk } from '../domain/knowledge-base.ts';
import type { DocumentChunk } from '../domain/knowledge-chunks.ts';
import type { QueryTerm } from '../domain/knowledge-terms.ts';
import { type ChunkIndex, type IndexedChunk, KnowledgeIndexCache, rankChunks } from './knowledge-index.ts';
import { type ContentStamp, inverseDocumentFrequency, selectiveTerms, TermStats } from './knowledge-term-stats.ts';
import { type Neighbour, VectorIndex } from './knowledge-vectors.ts';
import { detectPgvector, nearestInDatabase, vectorLiteral, type VectorSearch } from './knowledge-pgvector.ts';
import { type KnowledgeChangeFeed, KnowledgeStamps } from './knowledge-stamps.ts';
import { vectorBytes } from '../lib/vectors.ts';
import type { Dialect, Executor, Store } from './store.ts';
import type { KnowledgeBaseTable, KnowledgeSourceTable, SourceStatus } from './tables/knowledge.tables.ts';

export type KnowledgeBaseRow = Selectable<KnowledgeBaseTable>;
/** A source as listed: everything but its bytes. */
export type KnowledgeSourceRow = Omit<Selectable<KnowledgeSourceTable>, 'body'>;
export type NewKnowledgeSource = Omit<Selectable<KnowledgeSourceTable>, 'chunk_count'>;

const SOURCE_COLUMNS = ['id', 'knowledge_base_id', 'type', 'title', 'format', 'url', 'status', 'error', 'chunk_count', 'created_at', 'updated_at'] as const;

/** Knowledge bases, their sources and chunks, and the lexical search over the chunks. */
export class KnowledgeRepository {
  readonly #db: Executor;
  readonly #dialect: Dialect;
  readonly #termStats = new TermStats();
  readonly #vectors = new VectorIndex();
  readonly #indexes: KnowledgeIndexCache;
  /** The bases' content stamps remembered while change notifications keep them current (PostgreSQL with a feed). */
  readonly #stamps: KnowledgeStamps | null;
  /**
   * `maxIndexedChunks`: chunks indexed in the process at most (knowledge-index.ts; tests lower it).
   * `changes`: PostgreSQL's change notifications (knowledge-stamps.ts); without them every search
   * reads the bases' content stamps.
   */
  constructor(store: Store, options: { maxIndexedChunks?: number; changes?: KnowledgeChangeFeed } = {}) {
    this.#db = store.db;
    this.#dialect = store.dialect;
    this.#indexes = new KnowledgeIndexCache(options.maxIndexedChunks);
    this.#stamps = options.changes && store.dialect === 'postgres' ? new KnowledgeStamps(options.changes) : null;
  }

  /**
   * Which vector search this store uses: pgvector where the PostgreSQL server has it (found, and
   * made ready, once: knowledge-pgvector.ts), the scan in the process otherwise. The composition
   * root asks at start-up, before any chunk is written, when an embeddings endpoint is configured;
   * the first vector search asks otherwise. A detection that fails (the database unreachable) is
   * asked again next time.
   */
  vectorSearch(): Promise<VectorSearch> {
    if (this.#dialect !== 'postgres') return Promise.resolve({ search: 'in_process', reason: 'the store is SQLite' });
    this.#vectorSearch ??= detectPgvector(this.#db).then(
      (found) => {
        this.#pgvector = found.search === 'pgvector';
        return found;
      },
      (error: unknown) => {
        this.#vectorSearch = null;
        throw error;
      },
    );
    return this.#vectorSearch;
  }
  #vectorSearch: Promise<VectorSearch> | null = null;
  /** True once pgvector is found: chunks are then written with their `embedding_vector` too. */
  #pgvector = false;

  /** Round trips made for content stamps by searches (tests and the benchmark). */
  get stampReads(): number {
    return this.#stampReads;
  }
  #stampReads = 0;

  async insertBase(row: KnowledgeBaseRow, db: Executor = this.#db): Promise<void> {
    await db.insertInto('knowledge_bases').values(row).execute();
  }

  async countBases(accountId: string, db: Executor = this.#db): Promise<number> {
    const row = await db.selectFrom('knowledge_bases').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async findBase(accountId: string, id: string, db: Executor = this.#db): Promise<KnowledgeBaseRow | undefined> {
    return db.selectFrom('knowledge_bases').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  /** The account's bases whose ids are given (those that exist). */
  async findBases(accountId: string, ids: readonly string[], db: Executor = this.#db): Promise<KnowledgeBaseRow[]> {
    if (ids.length === 0) return [];
    return db.selectFrom('knowledge_bases').selectAll().where('account_id', '=', accountId).where('id', 'in', [...ids]).execute();
  }

  /** Locks the base's row for a change of its sources (PostgreSQL; SQLite transactions are exclusive). */
  async lockBase(accountId: string, id: string, db: Executor): Promise<KnowledgeBaseRow | undefined> {
    let query = db.selectFrom('knowledge_bases').selectAll().where('id', '=', id).where('account_id', '=', accountId);
    if (this.#dialect === 'postgres') query = query.forUpdate();
    return query.executeTakeFirst();
  }

  /** Locks the base's row by id alone (ingestion, which has no account at hand). */
  async lockBaseById(id: string, db: Executor): Promise<KnowledgeBaseRow | undefined> {
    let query = db.selectFrom('knowledge_bases').selectAll().where('id', '=', id);
    if (this.#dialect === 'postgres') query = query.forUpdate();
    return query.executeTakeFirst();
  }

  async touchBase(id: string, now: number, db: Executor = this.#db): Promise<void> {
    await db.updateTable('knowledge_bases').set({ updated_at: now }).where('id', '=', id).execute();
  }

  /** Oldest first. */
  async listBases(accountId: string): Promise<KnowledgeBaseRow[]> {
    return this.#db.selectFrom('knowledge_bases').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  }

  /** Deletes the base, its sources and chunks. */
  async deleteBase(id: string, db: Executor): Promise<void> {
    this.#stamps?.changing(id);
    await db.deleteFrom('knowledge_base_chunks').where('knowledge_base_id', '=', id).execute();
    await db.deleteFrom('knowledge_base_sources').where('knowledge_base_id', '=', id).execute();
    await db.deleteFrom('knowledge_bases').where('id', '=', id).execute();
  }

  async insertSources(rows: readonly NewKnowledgeSource[], db: Executor = this.#db): Promise<void> {
    for (const row of rows) this.#stamps?.changing(row.knowledge_base_id);
    if (rows.length > 0) await db.insertInto('knowledge_base_sources').values([...rows]).execute();
  }

  async countSources(baseId: string, db: Executor = this.#db): Promise<number> {
    const row = await db.selectFrom('knowledge_base_sources').select((eb) => eb.fn.countAll<number>().as('n')).where('knowledge_base_id', '=', baseId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The sources of these bases, oldest first, without their bytes. */
  async listSources(baseIds: readonly string[], db: Executor = this.#db): Promise<KnowledgeSourceRow[]> {
    if (baseIds.length === 0) return [];
    return db.selectFrom('knowledge_base_sources').select(SOURCE_COLUMNS).where('knowledge_base_id', 'in', [...baseIds]).orderBy('created_at').orderBy('id').execute();
  }

  async findSource(baseId: string, sourceId: string, db: Executor = this.#db): Promise<KnowledgeSourceRow | undefined> {
    return db.selectFrom('knowledge_base_sources').select(SOURCE_COLUMNS).where('id', '=', sourceId).where('knowledge_base_id', '=', baseId).executeTakeFirst();
  }

  /** A source's bytes, for its ingestion. */
  /** The knowledge base of each of these sources that exists, by source id. */
  async sourceBases(sourceIds: readonly string[]): Promise<Map<string, string>> {
    if (sourceIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('knowledge_base_sources').select(['id', 'knowledge_base_id']).where('id', 'in', [...sourceIds]).execute();
    return new Map(rows.map((r) => [r.id, r.knowledge_base_id]));
  }

  async sourceBody(sourceId: string): Promise<Uint8Array | null | undefined> {
    const row = await this.#db.selectFrom('knowledge_base_sources').select('body').where('id', '=', sourceId).executeTakeFirst();
    return row?.body;
  }

  /** Sources still waiting for ingestion, oldest first (after a restart). */
  async pendingSources(limit: number): Promise<Array<{ id: string; knowledge_base_id: string }>> {
    return this.#db.selectFrom('knowledge_base_sources').select(['id', 'knowledge_base_id']).where('status', '=', 'in_progress').orderBy('id').limit(limit).execute();
  }

  async deleteSource(baseId: string, sourceId: string, db: Executor): Promise<void> {
    this.#stamps?.changing(baseId);
    await db.deleteFrom('knowledge_base_chunks').where('source_id', '=', sourceId).execute();
    await db.deleteFrom('knowledge_base_sources').where('id', '=', sourceId).execute();
  }

  /**
   * Chunks of the base, all sources together: the sum of its sources' `chunk_count` (written with
   * their chunks, in the same transaction), read from the sources' stamp index instead of counting
   * the chunks (an ingestion asks before each source).
   */
  async countChunks(baseId: string, db: Executor = this.#db): Promise<number> {
    const row = await db.selectFrom('knowledge_base_sources').select((eb) => eb.fn.sum<number>('chunk_count').as('n')).where('knowledge_base_id', '=', baseId).executeTakeFirstOrThrow();
    return Number(row.n ?? 0);
  }

  /**
   * Replaces the source's chunks with `chunks` (and their vectors, in order, when `embedded`) and
   * marks it complete (a URL's `format` as found when fetched), in `db`'s transaction; false (and
   * nothing written) when the source is gone or no longer in progress.
   */
  async completeSource(
    baseId: string,
    sourceId: string,
    chunks: readonly DocumentChunk[],
    now: number,
    db: Executor,
    embedded?: ChunkVectors,
    format?: DocumentFormat,
  ): Promise<boolean> {
    const updated = await db
      .updateTable('knowledge_base_sources')
      .set({ status: 'complete', error: null, chunk_count: chunks.length, updated_at: now, ...(format ? { format } : {}) })
      .where('id', '=', sourceId)
      .where('status', '=', 'in_progress')
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return false;
    await this.#writeChunks(baseId, sourceId, chunks, db, embedded);
    return true;
  }

  /**
   * A refresh: replaces a complete source's chunks with `chunks` (and their vectors when
   * `embedded`; its `format` as now fetched), in `db`'s transaction; false (and nothing written)
   * when the source is gone or not complete.
   */
  async replaceChunks(
    baseId: string,
    sourceId: string,
    chunks: readonly DocumentChunk[],
    format: DocumentFormat,
    now: number,
    db: Executor,
    embedded?: ChunkVectors,
  ): Promise<boolean> {
    const updated = await db
      .updateTable('knowledge_base_sources')
      .set({ chunk_count: chunks.length, updated_at: now, format })
      .where('id', '=', sourceId)
      .where('status', '=', 'complete')
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return false;
    await this.#writeChunks(baseId, sourceId, chunks, db, embedded);
    return true;
  }

  async #writeChunks(baseId: string, sourceId: string, chunks: readonly DocumentChunk[], db: Executor, embedded?: ChunkVectors): Promise<void> {
    // pgvector's column is written once the detection found it (the composition root awaits it
    // before any ingestion). Not awaited here: a transaction waiting on another connection could
    // wait for ever on a pool whose connections all wait the same way. Chunks written without it
    // are given their vectors by the next detection (a restart).
    this.#stamps?.changing(baseId);
    await db.deleteFrom('knowledge_base_chunks').where('source_id', '=', sourceId).execute();
    const rows = chunks.map((chunk, position) => {
      const vector = embedded?.vectors[position];
      const embedding = vector
        ? { embedding: vectorBytes(vector), embedding_model: embedded.model, ...(this.#pgvector ? { embedding_vector: sql<string>`${vectorLiteral(vector)}::vector` } : {}) }
        : {};
      return { knowledge_base_id: baseId, source_id: sourceId, position, heading: chunk.heading, text: chunk.text, words: chunk.words, ...embedding };
    });
    // Batches keep each statement under SQLite's bound-parameter limit.
    for (let i = 0; i < rows.length; i += 500) await db.insertInto('knowledge_base_chunks').values(rows.slice(i, i + 500)).execute();
  }

  /** Complete URL sources of auto-refreshing knowledge bases last fetched before `before`, longest ago first. */
  async dueRefreshes(before: number, limit: number): Promise<Array<{ id: string; knowledge_base_id: string; url: string | null; updated_at: number }>> {
    const rows = await this.#db
      .selectFrom('knowledge_base_sources as s')
      .innerJoin('knowledge_bases as b', 'b.id', 's.knowledge_base_id')
      .select(['s.id', 's.knowledge_base_id', 's.url', 's.updated_at'])
      .where('s.type', '=', 'url')
      .where('s.status', '=', 'complete')
      .where('s.updated_at', '<', before)
      .where('b.auto_refresh', '=', 1)
      .orderBy('s.updated_at')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...row, updated_at: Number(row.updated_at) }));
  }

  /**
   * Claims a source's refresh by moving its `updated_at` from `seen` to `now`: false when another
   * server claimed it first or it changed since it was read (so each refresh runs once).
   */
  async claimRefresh(sourceId: string, seen: number, now: number): Promise<boolean> {
    const updated = await this.#db
      .updateTable('knowledge_base_sources')
      .set({ updated_at: now })
      .where('id', '=', sourceId)
      .where('status', '=', 'complete')
      .where('updated_at', '=', seen)
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1;
  }

  async failSource(sourceId: string, error: string, now: number, db: Executor = this.#db): Promise<void> {
    await db
      .updateTable('knowledge_base_sources')
      .set({ status: 'error' satisfies SourceStatus, error, updated_at: now })
      .where('id', '=', sourceId)
      .where('status', '=', 'in_progress')
      .execute();
  }

  /**
   * The `limit` chunks of the bases that best answer `query` (knowledge-terms.ts's weighted
   * terms), best first, ranked in the process with BM25F, section and passage evidence (knowledge-index.ts):
   * the bases' content stamps are read in one round trip (on PostgreSQL with change notifications,
   * only those not remembered: knowledge-stamps.ts), a base whose index is missing or stale has its
   * chunks read and indexed, and the chunks found are read by id. `score` maps the relevance into (0, 1).
   * Bases holding together more chunks than the process indexes (MAX_INDEXED_CHUNKS) are ranked
   * by the store instead (`searchInStore`, by the words of the caller's last turn).
   */
  async search(baseIds: readonly string[], query: readonly QueryTerm[], limit: number): Promise<RetrievedChunk[]> {
    if (baseIds.length === 0 || query.length === 0) return [];
    const stamps = await this.#baseStamps(baseIds);
    const total = sumStamps(stamps.values());
    if (total.chunks === 0) return [];
    if (total.chunks > this.#indexes.maxChunks) return this.searchInStore(baseIds, query.filter((t) => t.weight === 1).map((t) => t.term), limit, total);
    const pending: Array<Promise<ChunkIndex>> = [];
    for (const [baseId, stamp] of stamps) if (stamp.chunks > 0) pending.push(this.#indexes.index(baseId, stamp, () => this.#indexedChunks(baseId)));
    const ranked = rankChunks(await Promise.all(pending), query, limit);
    const byId = new Map((await this.chunksByIds(ranked.map((r) => r.id))).map((c) => [c.chunk_id, c]));
    return ranked.flatMap(({ id, relevance }) => {
      const chunk = byId.get(id);
      return chunk ? [{ ...chunk, score: relevance / (relevance + 1) }] : [];
    });
  }

  /** The content stamp of each of the bases that has sources: remembered (knowledge-stamps.ts) or read. */
  #baseStamps(baseIds: readonly string[]): Promise<Map<string, ContentStamp>> {
    return this.#stamps ? this.#stamps.stamps(baseIds, (ids) => this.#readStamps(ids)) : this.#readStamps(baseIds);
  }

  /** One grouped aggregate over the bases' sources. */
  async #readStamps(baseIds: readonly string[]): Promise<Map<string, ContentStamp>> {
    this.#stampReads++;
    const rows = await this.#db
      .selectFrom('knowledge_base_sources')
      .select((eb) => ['knowledge_base_id', eb.fn.countAll<number>().as('sources'), eb.fn.max('updated_at').as('updated_at'), eb.fn.sum<number>('chunk_count').as('chunks')])
      .where('knowledge_base_id', 'in', [...baseIds])
      .groupBy('knowledge_base_id')
      .execute();
    return new Map(rows.map((row) => [row.knowledge_base_id, { sources: Number(row.sources), updatedAt: Number(row.updated_at ?? 0), chunks: Number(row.chunks ?? 0) }]));
  }

  /** A base's chunks as its index is built from them. */
  async #indexedChunks(baseId: string): Promise<IndexedChunk[]> {
    const rows = await this.#db.selectFrom('knowledge_base_chunks').select(['id', 'source_id', 'heading', 'text']).where('knowledge_base_id', '=', baseId).orderBy('id').execute();
    return rows.map((row) => ({ id: Number(row.id), heading: row.heading, text: row.text, sourceId: row.source_id }));
  }

  /**
   * The store's own ranking, for bases too large to index in the process: the `limit` chunks of
   * the bases that best match `terms` (unweighted, as queryTerms gives them), best first,
   * BM25-ranked, by the terms worth ranking by (`selectiveTerms`: a term found in more than half
   * the chunks is left out, as BM25 weighs it near zero). SQLite: FTS5's bm25() (heading matches
   * weigh twice). PostgreSQL: BM25's shape over full-text search: each term's inverse document
   * frequency in these bases times its ts_rank in the chunk (which saturates with the term's
   * frequency and is normalised by the chunk's length), summed. `score` maps that relevance into
   * (0, 1).
   */
  async searchInStore(baseIds: readonly string[], terms: readonly string[], limit: number, known?: ContentStamp): Promise<RetrievedChunk[]> {
    if (baseIds.length === 0 || terms.length === 0) return [];
    const stamp = known ?? (await this.#contentStamp(baseIds));
    if (stamp.chunks === 0) return [];
    const df = await this.#termStats.frequencies(baseIds, stamp, terms, (term) => this.#documentFrequency(baseIds, term));
    const selected = selectiveTerms(df, stamp.chunks);
    if (selected.length === 0) return [];
    const rows =
      this.#dialect === 'postgres'
        ? await this.#searchPostgres(baseIds, selected.map((term) => ({ term, idf: inverseDocumentFrequency(df.get(term)!, stamp.chunks) })), limit)
        : await this.#searchSqlite(baseIds, selected, limit);
    return rows.map((row) => {
      const relevance = Math.max(0, Number(row.relevance));
      return { chunk_id: Number(row.id), source_id: row.source_id, heading: row.heading, text: row.text, score: relevance / (relevance + 1) };
    });
  }

  /**
   * The `limit` chunks of the bases whose vectors of `model` are nearest `vector` (of unit
   * length), nearest first (ties: the lower id first): ranked by pgvector in the database where the
   * store has it (knowledge-pgvector.ts), else an exact scan in the process (knowledge-vectors.ts).
   * Null when the vectors could not be read (the process) or ranked (the database) by `deadline`
   * (a performance.now() time).
   */
  async nearest(baseIds: readonly string[], model: string, vector: Float32Array, limit: number, deadline = Infinity): Promise<Neighbour[] | null> {
    if (baseIds.length === 0) return [];
    if ((await this.vectorSearch()).search === 'pgvector') return byDeadline(nearestInDatabase(this.#db, baseIds, model, vector, limit), deadline);
    const stamp = sumStamps((await this.#baseStamps(baseIds)).values());
    if (stamp.chunks === 0) return [];
    return this.#vectors.nearest(baseIds, model, stamp, vector, limit, (afterId, rows) =>
      this.#db
        .selectFrom('knowledge_base_chunks')
        .select(['id', 'embedding'])
        .where('knowledge_base_id', 'in', [...baseIds])
        .where('embedding_model', '=', model)
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(rows)
        .execute()
        .then((found) => found.map((row) => ({ id: Number(row.id), embedding: row.embedding }))),
      deadline,
    );
  }

  /** The chunks of these ids (those that still exist), in no order; `score` 0. */
  async chunksByIds(ids: readonly number[]): Promise<RetrievedChunk[]> {
    if (ids.length === 0) return [];
    const rows = await this.#db.selectFrom('knowledge_base_chunks').select(['id', 'source_id', 'heading', 'text']).where('id', 'in', [...ids]).execute();
    return rows.map((row) => ({ chunk_id: Number(row.id), source_id: row.source_id, heading: row.heading, text: row.text, score: 0 }));
  }

  /** What identifies the bases' content now (TermStats): one aggregate over their sources. */
  async #contentStamp(baseIds: readonly string[]): Promise<ContentStamp> {
    const row = await this.#db
      .selectFrom('knowledge_base_sources')
      .select((eb) => [eb.fn.countAll<number>().as('sources'), eb.fn.max('updated_at').as('updated_at'), eb.fn.sum<number>('chunk_count').as('chunks')])
      .where('knowledge_base_id', 'in', [...baseIds])
      .executeTakeFirstOrThrow();
    return { sources: Number(row.sources), updatedAt: Number(row.updated_at ?? 0), chunks: Number(row.chunks ?? 0) };
  }

  /** In how many chunks of the bases `term` occurs (stemmed as the index stems it). */
  async #documentFrequency(baseIds: readonly string[], term: string): Promise<number> {
    const { rows } =
      this.#dialect === 'postgres'
        ? await sql<{ df: number }>`
            select count(*) as df from knowledge_base_chunks
            where knowledge_base_id = any(${[...baseIds]}) and search @@ plainto_tsquery('english', ${term})`.execute(this.#db)
        : await sql<{ df: number }>`
            select count(*) as df from knowledge_base_chunks_fts
            where knowledge_base_chunks_fts match ${ftsQuery(baseIds, [term])}`.execute(this.#db);
    return Number(rows[0]?.df ?? 0);
  }

  async #searchSqlite(baseIds: readonly string[], terms: readonly string[], limit: number): Promise<SearchRow[]> {
    // The index finds the chunks of these bases holding any term (the base is an indexed column
    // with no weight in the rank; heading matches weigh twice); only the best `limit` are read whole.
    const { rows } = await sql<SearchRow>`
      select c.id, c.source_id, c.heading, c.text, best.relevance
      from (
        select rowid as id, -bm25(knowledge_base_chunks_fts, 0.0, 2.0, 1.0) as relevance
        from knowledge_base_chunks_fts
        where knowledge_base_chunks_fts match ${ftsQuery(baseIds, terms)}
        order by bm25(knowledge_base_chunks_fts, 0.0, 2.0, 1.0) limit ${limit}
      ) best join knowledge_base_chunks c on c.id = best.id
      order by best.relevance desc, c.id`.execute(this.#db);
    return rows;
  }

  async #searchPostgres(baseIds: readonly string[], terms: ReadonlyArray<{ term: string; idf: number }>, limit: number): Promise<SearchRow[]> {
    const weighted = sql.join(terms.map(({ term, idf }) => sql`(plainto_tsquery('english', ${term}), ${idf}::float8)`));
    const { rows } = await sql<SearchRow>`
      with weighted(q, idf) as materialized (values ${weighted})
      select c.id, c.source_id, c.heading, c.text,
        (select sum(w.idf * ts_rank('{0.5, 0.5, 1.0, 1.0}', c.search, w.q, 1)) * 4 from weighted w) as relevance
      from knowledge_base_chunks c
      where c.knowledge_base_id = any(${[...baseIds]})
        and c.search @@ (select string_agg(q::text, ' | ')::tsquery from weighted)
      order by relevance desc, c.id limit ${limit}`.execute(this.#db);
    return rows;
  }
}

/**
 * The FTS5 query for chunks of `baseIds` holding any of `terms`. A base is its `base_key` token
 * (the id's 32 hex digits, migration 0021); terms hold only letters and digits (queryTerms). Each
 * is quoted as a phrase.
 */
function ftsQuery(baseIds: readonly string[], terms: readonly string[]): string {
  const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`;
  return `base_key : (${baseIds.map((id) => phrase(id.slice(-32))).join(' OR ')}) AND {heading text} : (${terms.map(phrase).join(' OR ')})`;
}

/**
 * `ranking`, or null when it is not there by `deadline` (a performance.now() time). A late
 * statement runs to its end on its connection; its answer (or error) is dropped.
 */
async function byDeadline<T>(ranking: Promise<T>, deadline: number): Promise<T | null> {
  if (deadline === Infinity) return ranking;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, deadline - performance.now()));
  });
  ranking.catch(() => {}); // once late, nobody waits for it
  try {
    return await Promise.race([ranking, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The stamp of several bases together, from each one's. */
function sumStamps(stamps: Iterable<ContentStamp>): ContentStamp {
  const sum = { sources: 0, updatedAt: 0, chunks: 0 };
  for (const s of stamps) {
    sum.sources += s.sources;
    sum.updatedAt = Math.max(sum.updatedAt, s.updatedAt);
    sum.chunks += s.chunks;
  }
  return sum;
}

/** A source's chunk vectors, in the chunks' order, and their model. */
export interface ChunkVectors {
  model: string;
  vectors: readonly Float32Array[];
}

interface SearchRow {
  id: number;
  source_id: string;
  heading: string;
  text: string;
  relevance: number;
}
