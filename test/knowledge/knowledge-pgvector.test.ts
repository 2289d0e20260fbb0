import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { normalized, vectorBytes } from '../../src/lib/vectors.ts';
import { KnowledgeRepository } from '../../src/storage/knowledge.repository.ts';
import { VectorIndex } from '../../src/storage/knowledge-vectors.ts';
import type { Store } from '../../src/storage/store.ts';
import { openPgliteStore } from '../helpers/pglite.ts';
import { runCli } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

const DIMS = 24;

/** A deterministic pseudo-random unit vector (xorshift), so both searches see the same corpus. */
function randomVector(seed: number, dims = DIMS): Float32Array {
  let x = (seed * 2654435761) >>> 0 || 1;
  return normalized(
    Float32Array.from({ length: dims }, () => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      return x / 0xffffffff - 0.5;
    }),
  );
}

let sources = 0;
/** One source of `vectors.length` chunks in base `baseId` (created when new), written as ingestion writes them. */
async function ingest(store: Store, repo: KnowledgeRepository, baseId: string, model: string, vectors: readonly Float32Array[]): Promise<void> {
  await repo.vectorSearch(); // as the composition root does before any ingestion
  const now = Date.now();
  const sourceId = `knowledge_source_${++sources}`;
  await store.transaction(async (tx) => {
    if (!(await repo.findBase('acct', baseId, tx))) await repo.insertBase({ id: baseId, account_id: 'acct', name: baseId, auto_refresh: 0, created_at: now, updated_at: now }, tx);
    await repo.insertSources([{ id: sourceId, knowledge_base_id: baseId, type: 'text', title: 't', format: 'text', url: null, body: null, status: 'in_progress', error: null, created_at: now, updated_at: now + sources }], tx);
    const chunks = vectors.map((_, i) => ({ heading: `h${i}`, text: `chunk ${i}`, words: 2 }));
    assert.equal(await repo.completeSource(baseId, sourceId, chunks, now + sources, tx, { model, vectors }), true);
  });
}

/** The in-process search over the same stored rows (the bytes), as a server without pgvector ranks them. */
async function inProcess(store: Store, baseIds: readonly string[], model: string, query: Float32Array, limit: number): Promise<number[]> {
  const rows = await store.db.selectFrom('knowledge_base_chunks').select(['id', 'embedding']).where('knowledge_base_id', 'in', [...baseIds]).where('embedding_model', '=', model).orderBy('id').execute();
  const read = async (afterId: number, n: number) => rows.filter((r) => Number(r.id) > afterId).slice(0, n).map((r) => ({ id: Number(r.id), embedding: r.embedding }));
  const found = await new VectorIndex().nearest(baseIds, model, { sources: 1, updatedAt: 1, chunks: rows.length }, query, limit, read);
  return found!.map((n) => n.id);
}

describe('the knowledge vector search on PostgreSQL with pgvector (PGlite)', () => {
  let t: TestStore;
  before(async () => {
    t = await openPgliteStore();
  });
  after(async () => {
    await t.close();
  });

  // Before the extension is created (the next test creates it): doctor finds without changing anything.
  it('cli doctor says pgvector, and creates nothing', async () => {
    const installed = async () => (await sql<{ installed_version: string | null }>`select installed_version from pg_available_extensions where name = 'vector'`.execute(t.store.db)).rows[0]?.installed_version;
    assert.equal(await installed(), null, 'available, not yet created');
    const res = await runCli(['doctor', '--json'], { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy', DATABASE_URL: t.databaseUrl!, EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1' });
    const report = JSON.parse(res.stdout) as { knowledge: { store: string; vector_search: string; detail: string } };
    assert.equal(report.knowledge.store, 'postgresql');
    assert.equal(report.knowledge.vector_search, 'pgvector');
    assert.match(report.knowledge.detail, /^pgvector \d+\.\d+\.\d+: vectors are searched in the database; hybrid retrieval ranks by vector$/);
    assert.equal(await installed(), null, 'doctor created nothing');
  });

  it('finds pgvector, creates the extension and the vector column, and gives chunks embedded before it their vectors', async () => {
    const early = randomVector(1);
    // Written by a server that predates pgvector search (or before the extension was installed): the bytes only.
    const now = Date.now();
    await t.store.db.insertInto('knowledge_bases').values({ id: 'kb_early', account_id: 'acct', name: 'early', created_at: now, updated_at: now }).execute();
    await t.store.db.insertInto('knowledge_base_sources').values({ id: 'knowledge_source_early', knowledge_base_id: 'kb_early', type: 'text', title: 't', format: 'text', url: null, body: null, status: 'complete', error: null, chunk_count: 1, created_at: now, updated_at: now }).execute();
    await t.store.db.insertInto('knowledge_base_chunks').values({ knowledge_base_id: 'kb_early', source_id: 'knowledge_source_early', position: 0, heading: 'h', text: 't', words: 1, embedding: vectorBytes(early), embedding_model: 'm' }).execute();
    const extension = async () => (await sql<{ installed_version: string | null }>`select installed_version from pg_available_extensions where name = 'vector'`.execute(t.store.db)).rows[0];
    assert.equal((await extension())?.installed_version, null, 'available, not yet created');

    const repo = new KnowledgeRepository(t.store);
    const found = await repo.vectorSearch();
    assert.equal(found.search, 'pgvector');
    assert.match((found as { version: string }).version, /^0\.\d+\.\d+$/);
    assert.equal((await extension())?.installed_version, (found as { version: string }).version);
    assert.equal(repo.vectorSearch(), repo.vectorSearch(), 'found once');

    const stored = await sql<{ v: string }>`select embedding_vector::text as v from knowledge_base_chunks where knowledge_base_id = 'kb_early'`.execute(t.store.db);
    assert.deepEqual(Float32Array.from(JSON.parse(stored.rows[0]!.v)), early, 'backfilled from the bytes, the same float32 values');
    const later = randomVector(2);
    await ingest(t.store, repo, 'kb_later', 'm', [later]);
    const written = await sql<{ v: string }>`select embedding_vector::text as v from knowledge_base_chunks where knowledge_base_id = 'kb_later'`.execute(t.store.db);
    assert.deepEqual(Float32Array.from(JSON.parse(written.rows[0]!.v)), later, 'written with the chunk');
    // A second detection (another server starting) changes nothing.
    assert.equal((await new KnowledgeRepository(t.store).vectorSearch()).search, 'pgvector');
  });

  it('ranks in the database as the in-process search ranks, across bases, ties by the lower id', async () => {
    const repo = new KnowledgeRepository(t.store);
    const twin = randomVector(999);
    await ingest(t.store, repo, 'kb_a', 'm', [...Array.from({ length: 150 }, (_, i) => randomVector(100 + i)), twin]);
    await ingest(t.store, repo, 'kb_b', 'm', [...Array.from({ length: 150 }, (_, i) => randomVector(300 + i)), twin]);
    await ingest(t.store, repo, 'kb_a', 'm', Array.from({ length: 100 }, (_, i) => randomVector(500 + i)));
    for (let q = 0; q < 20; q++) {
      const query = randomVector(7_000 + q);
      const bases = q % 2 === 0 ? ['kb_a', 'kb_b'] : ['kb_a'];
      const ranked = await repo.nearest(bases, 'm', query, 10);
      assert.deepEqual(ranked!.map((n) => n.id), await inProcess(t.store, bases, 'm', query, 10), `query ${q}`);
      for (const n of ranked!) assert.ok(n.similarity >= -1.0001 && n.similarity <= 1.0001);
    }
    const twins = await repo.nearest(['kb_a', 'kb_b'], 'm', twin, 2);
    assert.deepEqual(twins!.map((n) => n.id), await inProcess(t.store, ['kb_a', 'kb_b'], 'm', twin, 2));
    assert.ok(twins![0]!.id < twins![1]!.id, 'equal vectors: the lower id first');
    assert.ok(Math.abs(twins![0]!.similarity - 1) < 1e-5);
  });

  it("compares only vectors of the query's model and dimension (a base re-embedded at another dimension)", async () => {
    const repo = new KnowledgeRepository(t.store);
    await ingest(t.store, repo, 'kb_dims', 'm', [randomVector(11), randomVector(12)]);
    await ingest(t.store, repo, 'kb_dims', 'm', [randomVector(13, 8), randomVector(14, 8), randomVector(15, 8)]);
    await ingest(t.store, repo, 'kb_dims', 'other', [randomVector(16)]);
    const ids = async (model: string) =>
      (await t.store.db.selectFrom('knowledge_base_chunks').select(['id', 'embedding']).where('knowledge_base_id', '=', 'kb_dims').where('embedding_model', '=', model).orderBy('id').execute()).map((r) => ({
        id: Number(r.id),
        dims: r.embedding!.byteLength / 4,
      }));
    const small = (await ids('m')).filter((r) => r.dims === 8).map((r) => r.id);
    const found = await repo.nearest(['kb_dims'], 'm', randomVector(13, 8), 10);
    assert.deepEqual(found!.map((n) => n.id).sort((a, b) => a - b), small, 'the 8-dimension vectors only');
    assert.equal(found![0]!.id, small[0], 'its own vector first');
    assert.equal((await repo.nearest(['kb_dims'], 'm', randomVector(11), 10))!.length, 2);
    assert.deepEqual((await repo.nearest(['kb_dims'], 'other', randomVector(11), 10))!.map((n) => n.id), (await ids('other')).map((r) => r.id));
  });

  it("ranks from the database's vectors, not the process's", async () => {
    const repo = new KnowledgeRepository(t.store);
    await ingest(t.store, repo, 'kb_db', 'm', Array.from({ length: 30 }, (_, i) => randomVector(800 + i)));
    const query = randomVector(815);
    const expected = await inProcess(t.store, ['kb_db'], 'm', query, 5);
    // Without the bytes the process has nothing to scan; the vector column still ranks.
    await t.store.db.updateTable('knowledge_base_chunks').set({ embedding: null }).where('knowledge_base_id', '=', 'kb_db').execute();
    assert.deepEqual((await repo.nearest(['kb_db'], 'm', query, 5))!.map((n) => n.id), expected);
    assert.equal(await repo.nearest(['kb_db'], 'm', query, 5, performance.now()), null, 'not ranked by the deadline: none (the turn is ranked lexically)');
  });
});

describe('the knowledge vector search on a PostgreSQL server without pgvector', { skip: STORES.find((s) => s.name === 'postgres')!.skip }, () => {
  let t: TestStore;
  before(async () => {
    t = await openTestStore('postgres');
  });
  after(async () => {
    await t.close();
  });

  it('says it searches in the process and why, adds no column, and ranks as before', async (context) => {
    const listed = await sql`select 1 from pg_available_extensions where name = 'vector'`.execute(t.store.db);
    if (listed.rows.length > 0) return context.skip('this PostgreSQL server has pgvector');
    const repo = new KnowledgeRepository(t.store);
    assert.deepEqual(await repo.vectorSearch(), { search: 'in_process', reason: 'the PostgreSQL server has no vector extension (pgvector)' });
    const column = await sql`select 1 from information_schema.columns where table_name = 'knowledge_base_chunks' and column_name = 'embedding_vector'`.execute(t.store.db);
    assert.equal(column.rows.length, 0);
    await ingest(t.store, repo, 'kb_plain', 'm', Array.from({ length: 40 }, (_, i) => randomVector(900 + i)));
    const query = randomVector(920);
    assert.deepEqual((await repo.nearest(['kb_plain'], 'm', query, 5))!.map((n) => n.id), await inProcess(t.store, ['kb_plain'], 'm', query, 5));
  });
});

describe('the knowledge vector search on SQLite', () => {
  it('is the in-process search', async () => {
    const t = await openTestStore('sqlite');
    try {
      assert.deepEqual(await new KnowledgeRepository(t.store).vectorSearch(), { search: 'in_process', reason: 'the store is SQLite' });
    } finally {
      await t.close();
    }
  });
});
