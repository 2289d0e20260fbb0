import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES, type StoreKind } from '../helpers/stores.ts';
import { weightedQuery } from '../../src/domain/knowledge-terms.ts';
import { fuseRanks } from '../../src/domain/knowledge-embeddings.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { KnowledgeRepository } from '../../src/storage/knowledge.repository.ts';
import { knowledgeContextSource } from '../../src/media/knowledge-context.ts';
import { EmbeddingsServer, testEmbedding } from './embeddings-server.ts';
import { base64 } from './corpus.ts';

/** One chunk each. */
const SHOP = [
  { title: 'Returns', text: 'Refunds are paid to the original card within fourteen days of the return arriving at our warehouse.' },
  { title: 'Opening hours', text: 'The shop on Quay Street opens at nine and closes at six, Monday to Saturday.' },
  { title: 'Delivery', text: 'Parcels ship the next working day; rural addresses take two days longer.' },
  { title: 'Repairs', text: 'Punctures are mended while you wait: bring the wheel to the workshop on Quay Street.' },
  { title: 'Rentals', text: 'Bikes are rented by the day; the deposit is refunded when the bike is returned undamaged.' },
  { title: 'Gift cards', text: 'Gift cards never expire and can be spent in the shop or online, also on rentals.' },
];

type Chunk = { text: string; score: number; source_id: string };

// `pgvector`: the same tests on PostgreSQL with pgvector (PGlite), where the database ranks the vectors.
const KINDS: StoreKind[] = [...STORES, { name: 'pgvector', skip: false }];

for (const kind of KINDS) {
  describe(`hybrid knowledge retrieval on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let server: EmbeddingsServer;
    let key: string;
    before(async () => {
      server = new EmbeddingsServer();
      const url = await server.listen();
      h = await startHarness(kind.name, { EMBEDDINGS_BASE_URL: url, EMBEDDINGS_MODEL: 'hashed-words', EMBEDDINGS_API_KEY: 'sk-test' });
      ({ apiKey: key } = await h.account());
    });
    after(async () => {
      await h.close();
      await server.close();
    });

    async function createBase(on: Harness, as: string, body: Record<string, unknown>): Promise<{ id: string; view: any }> {
      const created = await on.request({ method: 'POST', url: '/create-knowledge-base', key: as, body: { knowledge_base_name: 'Shop', ...body } });
      assert.equal(created.status, 201, created.raw);
      await on.runtime.services.knowledge.settled();
      const got = await on.request({ method: 'GET', url: `/get-knowledge-base/${created.json.knowledge_base_id}`, key: as });
      return { id: created.json.knowledge_base_id, view: got.json };
    }
    async function search(on: Harness, as: string, id: string, query: string, top_k = 3): Promise<Chunk[]> {
      const res = await on.request({ method: 'POST', url: `/search-knowledge-base/${id}`, key: as, body: { query, top_k } });
      assert.equal(res.status, 200, res.raw);
      return res.json.chunks;
    }
    const titleOf = (chunk: Chunk) => chunk.text.split('\n')[0];

    it('embeds chunks at ingestion and finds by meaning a passage lexical search misses', async () => {
      const before = server.requests.length;
      const hybrid = await createBase(h, key, { knowledge_base_texts: SHOP });
      assert.equal(hybrid.view.status, 'complete');
      const ingestion = server.requests.slice(before);
      assert.deepEqual(ingestion.map((r) => r.input.length), [1, 1, 1, 1, 1, 1], 'one request per source (one chunk each)');
      assert.equal(ingestion[0]!.model, 'hashed-words');
      assert.equal(ingestion[0]!.authorization, 'Bearer sk-test');
      assert.equal(ingestion[0]!.input[0], 'Returns\nRefunds are paid to the original card within fourteen days of the return arriving at our warehouse.', 'a chunk is embedded as shown: headings, then text');

      const question = 'Can I get my money back?';
      const lexical = await new KnowledgeRepository(h.testStore.store).search([hybrid.id], weightedQuery([question]), 3);
      assert.deepEqual(lexical, [], 'no word of the question is in the documents');
      const found = await search(h, key, hybrid.id, question);
      assert.equal(titleOf(found[0]!), 'Returns', 'money is close to refunds');
      assert.ok(found.length <= 3);
      for (const chunk of found) assert.ok(chunk.score > 0 && chunk.score <= 1, `score ${chunk.score}`);
      assert.equal(server.requests.at(-1)!.input[0], question, 'the query is embedded as asked');

      // A call's turn ranks the same way: its context seam hands the engine the passage.
      const { accountId } = await h.account();
      const mine = await h.runtime.services.knowledge.createKnowledgeBase(accountId, { knowledge_base_name: 'Shop', knowledge_base_texts: SHOP });
      await h.runtime.services.knowledge.settled();
      const failures: unknown[] = [];
      const source = knowledgeContextSource({ accountId, ids: [mine.knowledge_base_id], searchable: [mine.knowledge_base_id], config: { top_k: 1 }, retriever: h.runtime.services.knowledge, onFailure: (e) => failures.push(e) });
      const context = await source.contextFor({ userText: question, history: [{ role: 'user', content: question }] }, new AbortController().signal);
      assert.deepEqual(failures, []);
      assert.deepEqual(context.passages.map((p) => p.source), ['Returns']);
    });

    it('ranks the vectors in the database where it has pgvector, in the process otherwise', async () => {
      const listed = kind.name !== 'sqlite' && (await sql`select 1 from pg_available_extensions where name = 'vector'`.execute(h.testStore.store.db)).rows.length > 0;
      const expected = kind.name === 'pgvector' || listed ? 'pgvector' : 'in_process';
      assert.equal((await new KnowledgeRepository(h.testStore.store).vectorSearch()).search, expected);
      if (kind.name !== 'pgvector') return;
      // With the vectors' bytes gone the process has nothing to rank; pgvector's column still ranks by meaning.
      const base = await createBase(h, key, { knowledge_base_texts: SHOP });
      await h.testStore.store.db.updateTable('knowledge_base_chunks').set({ embedding: null }).where('knowledge_base_id', '=', base.id).execute();
      assert.equal(titleOf((await search(h, key, base.id, 'Can I get my money back?'))[0]!), 'Returns');
    });

    it('ranks by reciprocal rank fusion of the lexical and the vector ranking (k = 60)', async () => {
      const base = await createBase(h, key, { knowledge_base_texts: SHOP });
      const query = 'How long until a bike deposit is refunded on Quay Street?';
      const got = await search(h, key, base.id, query, 6);

      // The expected order, computed here from the two rankings on their own.
      const repo = new KnowledgeRepository(h.testStore.store);
      const lexical = (await repo.search([base.id], weightedQuery([query]), 50)).map((c) => c.chunk_id);
      const rows = await h.testStore.store.db.selectFrom('knowledge_base_chunks').select(['id', 'heading', 'text']).where('knowledge_base_id', '=', base.id).execute();
      const q = unit(testEmbedding(query));
      const vector = rows
        .map((row) => ({ id: Number(row.id), similarity: dot(unit(testEmbedding(`${row.heading}\n${row.text}`)), q) }))
        .sort((a, b) => b.similarity - a.similarity || a.id - b.id)
        .map((n) => n.id);
      const expected = fuseRanks([lexical, vector]).map((f) => ({ heading: rows.find((r) => Number(r.id) === f.id)!.heading, score: f.score }));
      assert.deepEqual(got.map((c) => ({ heading: titleOf(c), score: c.score })).map((c) => ({ ...c, score: Number(c.score.toFixed(9)) })), expected.map((c) => ({ ...c, score: Number(c.score.toFixed(9)) })));
      // On this corpus: Rentals is first in both rankings; the rest interleave.
      assert.deepEqual(got.map(titleOf).slice(0, 2), ['Rentals', 'Repairs']);
      assert.equal(got[0]!.score, 1);
      assert.notDeepEqual(lexical, vector, 'the rankings differ, so the fusion is seen');
    });

    it('fails a source whose embeddings fail for good, and retries a passing failure', async () => {
      server.fail.push(400);
      const refused = await createBase(h, key, { knowledge_base_texts: [SHOP[0]] });
      assert.equal(refused.view.status, 'error');
      assert.equal(refused.view.knowledge_base_sources[0].error, 'The chunks could not be embedded: the embeddings endpoint answered HTTP 400.');
      assert.equal(refused.view.knowledge_base_sources[0].chunk_count, 0);

      server.fail.push('short');
      const broken = await createBase(h, key, { knowledge_base_texts: [SHOP[1]] });
      assert.equal(broken.view.knowledge_base_sources[0].error, 'The chunks could not be embedded: the embeddings endpoint gave a malformed answer.');

      const before = server.requests.length;
      server.fail.push(503, 429);
      const retried = await createBase(h, key, { knowledge_base_texts: [SHOP[2]] });
      assert.equal(retried.view.status, 'complete');
      assert.equal(server.requests.length - before, 3, 'two retries');
      assert.equal(titleOf((await search(h, key, retried.id, 'when will my package arrive'))[0]!), 'Delivery');
    });

    it('ranks lexically alone when the query cannot be embedded', async () => {
      const base = await createBase(h, key, { knowledge_base_texts: SHOP });
      server.down = 500;
      try {
        assert.deepEqual((await search(h, key, base.id, 'When does the shop open?')).map(titleOf)[0], 'Opening hours');
        assert.deepEqual(await search(h, key, base.id, 'Can I get my money back?'), [], 'lexical: nothing');
      } finally {
        server.down = null;
      }
      server.fail.push('hang');
      const started = performance.now();
      assert.deepEqual((await search(h, key, base.id, 'When does the shop open?')).map(titleOf)[0], 'Opening hours');
      const waited = performance.now() - started;
      assert.ok(waited >= 700 && waited < 3_000, `waited ${waited} ms for the query's vector`);
    });

    it('embeds a large source in batches of 64', async () => {
      const sections = Array.from({ length: 100 }, (_, i) => `## Part ${i}\n\nThe manual's part ${i} covers item${i}.\n`);
      const before = server.requests.length;
      const base = await createBase(h, key, { knowledge_base_files: [{ file_name: 'manual.md', content_base64: base64(`# Manual\n\n${sections.join('\n')}`) }] });
      assert.equal(base.view.knowledge_base_sources[0].chunk_count, 100);
      assert.deepEqual(server.requests.slice(before).map((r) => r.input.length), [64, 36]);
      assert.equal(titleOf((await search(h, key, base.id, 'item57'))[0]!), 'Manual > Part 57');
    });
  });
}

describe('the embeddings configuration', () => {
  it('is off unless EMBEDDINGS_BASE_URL is set, and names every bad variable', () => {
    assert.equal(loadConfig({}).knowledge.embeddings, null);
    assert.deepEqual(loadConfig({ EMBEDDINGS_BASE_URL: 'https://api.example.com/v1' }).knowledge.embeddings, {
      baseUrl: 'https://api.example.com/v1',
      model: 'text-embedding-3-small',
      timeoutMs: 10_000,
    });
    assert.throws(
      () => loadConfig({ EMBEDDINGS_BASE_URL: 'not a url', EMBEDDINGS_TIMEOUT_MS: '5' }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.includes('EMBEDDINGS_BASE_URL')) && error.problems.some((p) => p.includes('EMBEDDINGS_TIMEOUT_MS')),
    );
  });
});

describe('reciprocal rank fusion', () => {
  it('sums 1 / (k + rank) over the rankings, best first, scored against first-in-every-ranking', () => {
    const fused = fuseRanks([
      [1, 2, 3],
      [3, 1, 4],
    ]);
    const s = (ranks: number[]) => ranks.reduce((sum, r) => sum + 1 / (60 + r), 0) / (2 / 61);
    assert.deepEqual(fused, [
      { id: 1, score: s([1, 2]) },
      { id: 3, score: s([3, 1]) },
      { id: 2, score: s([2]) },
      { id: 4, score: s([3]) },
    ]);
    assert.equal(fuseRanks([[7], [7]])[0]!.score, 1);
    assert.deepEqual(fuseRanks([[5, 6], []]).map((f) => f.id), [5, 6]);
  });
});

function unit(v: number[]): number[] {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / norm);
}

function dot(a: number[], b: number[]): number {
  return a.reduce((s, x, i) => s + x * b[i]!, 0);
}
