/**
 * Knowledge-base vector search benchmark (issue 29): the nearest 50 chunks (hybrid retrieval's
 * candidates) of a knowledge base of 10,000 embedded chunks, ranked by pgvector in the database
 * against the in-process search, in the same run over the same rows.
 *
 *   node bench/knowledge-vectors.ts [--chunks 10000] [--dims 1536] [--queries 200]
 *
 * The database is PGlite (PostgreSQL compiled to WebAssembly) with its pgvector extension, served
 * over the PostgreSQL wire protocol on loopback: the only PostgreSQL with pgvector here (Debian's
 * has none). Being WebAssembly it is slower than a native server, so read pgvector's row as an
 * upper bound. Vectors are deterministic pseudo-random unit vectors of `dims` dimensions (1,536:
 * OpenAI's text-embedding-3-small), one base; queries are other such vectors.
 *
 * Rows:
 *  - baseline: one chunk read by primary key (the store's floor for one query);
 *  - pgvector: KnowledgeRepository.nearest as hybrid retrieval calls it (one exact query, cosine
 *    distance, over the base's chunks);
 *  - in process, kept: the same ranking in the process (knowledge-vectors.ts) with the base's
 *    vectors already read (every search after the first, until the base changes);
 *  - in process, first search: the vectors read from the store in pages of 1,000 and scanned.
 */
import { performance } from 'node:perf_hooks';
import { normalized } from '../src/lib/vectors.ts';
import { KnowledgeRepository } from '../src/storage/knowledge.repository.ts';
import { VectorIndex } from '../src/storage/knowledge-vectors.ts';
import type { Store } from '../src/storage/store.ts';
import { openPgliteStore } from '../test/helpers/pglite.ts';
import { fmt, machine, percentile } from './lib.ts';

export interface KnowledgeVectorsBenchOptions {
  chunks?: number;
  dims?: number;
  queries?: number;
  log: (line: string) => void;
}

const LIMIT = 50;
const BASE = 'knowledge_base_bench';
const MODEL = 'bench-model';

/** A deterministic unit vector (mulberry32). */
function vector(seed: number, dims: number): Float32Array {
  let a = seed;
  return normalized(
    Float32Array.from({ length: dims }, () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    }),
  );
}

async function fill(store: Store, repo: KnowledgeRepository, chunks: number, dims: number, log: (line: string) => void): Promise<void> {
  const now = Date.now();
  await repo.insertBase({ id: BASE, account_id: 'acct', name: 'bench', auto_refresh: 0, created_at: now, updated_at: now });
  const perSource = 500;
  for (let s = 0; s * perSource < chunks; s++) {
    const sourceId = `knowledge_source_bench${s}`;
    const count = Math.min(perSource, chunks - s * perSource);
    const vectors = Array.from({ length: count }, (_, i) => vector(1 + s * perSource + i, dims));
    await store.transaction(async (tx) => {
      await repo.insertSources([{ id: sourceId, knowledge_base_id: BASE, type: 'text', title: 't', format: 'text', url: null, body: null, status: 'in_progress', error: null, created_at: now, updated_at: now }], tx);
      const texts = vectors.map((_, i) => ({ heading: `Section ${s}.${i}`, text: `Chunk ${i} of source ${s}.`, words: 5 }));
      await repo.completeSource(BASE, sourceId, texts, now + s, tx, { model: MODEL, vectors });
    });
    if (s % 4 === 3) log(`knowledge-vectors: ${(s + 1) * perSource} chunks stored`);
  }
}

async function timed(queries: number, run: (q: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let q = 0; q < queries; q++) {
    const started = performance.now();
    await run(q);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

export async function runKnowledgeVectorsBench(options: KnowledgeVectorsBenchOptions): Promise<string> {
  const chunks = options.chunks ?? 10_000;
  const dims = options.dims ?? 1_536;
  const queries = options.queries ?? 200;
  const { log } = options;
  const started = performance.now();
  const t = await openPgliteStore();
  try {
    log(`knowledge-vectors: PGlite with pgvector up in ${fmt((performance.now() - started) / 1000, 1)} s`);
    const repo = new KnowledgeRepository(t.store);
    const found = await repo.vectorSearch();
    if (found.search !== 'pgvector') throw new Error(`pgvector not found: ${found.reason}`);
    const filling = performance.now();
    await fill(t.store, repo, chunks, dims, log);
    log(`knowledge-vectors: ${chunks} chunks of ${dims} dimensions stored in ${fmt((performance.now() - filling) / 1000, 1)} s`);
    const ids = (await t.store.db.selectFrom('knowledge_base_chunks').select('id').orderBy('id').execute()).map((r) => Number(r.id));
    const query = (q: number) => vector(1_000_000 + q, dims);
    const read = (afterId: number, rows: number) =>
      t.store.db
        .selectFrom('knowledge_base_chunks')
        .select(['id', 'embedding'])
        .where('knowledge_base_id', '=', BASE)
        .where('embedding_model', '=', MODEL)
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(rows)
        .execute()
        .then((rows) => rows.map((r) => ({ id: Number(r.id), embedding: r.embedding })));
    const stamp = { sources: Math.ceil(chunks / 500), updatedAt: 1, chunks };
    const kept = new VectorIndex();

    // Warm-up, and the check that both rank the same.
    for (let q = 0; q < 5; q++) {
      const inDb = (await repo.nearest([BASE], MODEL, query(q), LIMIT))!.map((n) => n.id);
      const inProcess = (await kept.nearest([BASE], MODEL, stamp, query(q), LIMIT, read))!.map((n) => n.id);
      if (inDb.join() !== inProcess.join()) throw new Error(`query ${q}: pgvector and the in-process search rank differently`);
    }
    const rows: Array<{ what: string; times: number[] }> = [];
    rows.push({ what: 'baseline: one chunk by primary key', times: await timed(queries, (q) => t.store.db.selectFrom('knowledge_base_chunks').select(['id', 'text']).where('id', '=', ids[q % ids.length]!).execute()) });
    rows.push({ what: `pgvector: nearest ${LIMIT} in the database (exact, cosine distance)`, times: await timed(queries, (q) => repo.nearest([BASE], MODEL, query(q), LIMIT)) });
    rows.push({ what: `in process, vectors kept: nearest ${LIMIT}`, times: await timed(queries, (q) => kept.nearest([BASE], MODEL, stamp, query(q), LIMIT, read)) });
    const coldQueries = Math.max(3, Math.floor(queries / 20));
    rows.push({ what: `in process, first search (vectors read from the store): nearest ${LIMIT}`, times: await timed(coldQueries, (q) => new VectorIndex().nearest([BASE], MODEL, stamp, query(q), LIMIT, read)) });
    const p50 = (what: string) => percentile(rows.find((r) => r.what.startsWith(what))!.times, 50);
    return [
      `${machine()}; ${chunks} chunks of ${dims} dimensions in one knowledge base; ${queries} queries (first searches: ${coldQueries}); PostgreSQL: PGlite 0.5 (WebAssembly) with pgvector ${found.version}, over loopback`,
      '',
      '| what | p50 ms | p99 ms |',
      '|---|---|---|',
      ...rows.map((r) => `| ${r.what} | ${fmt(percentile(r.times, 50), 2)} | ${fmt(percentile(r.times, 99), 2)} |`),
      '',
      `pgvector / in process (kept), p50: ${fmt(p50('pgvector') / p50('in process, vectors kept'), 2)}x; both ranked the warm-up queries identically.`,
    ].join('\n');
  } finally {
    await t.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const at = process.argv.indexOf(`--${name}`);
    return at === -1 ? undefined : Number(process.argv[at + 1]);
  };
  const log = (line: string) => process.stderr.write(`${line}\n`);
  process.stdout.write(`${await runKnowledgeVectorsBench({ chunks: arg('chunks'), dims: arg('dims'), queries: arg('queries'), log })}\n`);
}
