/**
 * Knowledge-base benchmark (issue 29): lexical retrieval time per turn over a knowledge base of
 * 10,000 chunks, and ingestion throughput, on each store.
 *
 *   node bench/knowledge.ts [--chunks 10000] [--queries 500] [--stores sqlite,postgres]
 *
 * The corpus is synthetic and deterministic: Markdown documents of sections of about 280 words
 * (one chunk each) drawn from an 8,000-word vocabulary with Zipf frequencies, as natural text has,
 * so common words match thousands of chunks. Queries are questions of 3 to 6 words taken from a
 * random chunk, with stopwords around them.
 *
 * Rows per store:
 *  - baseline: one chunk read by primary key (the store's floor for a query);
 *  - ranked in the store: the store's own full-text ranking (KnowledgeRepository.searchInStore),
 *    the path before the in-process index, for the ratio in the same run;
 *  - retrieval, stamps read at every search: the in-process ranking with the bases' content stamps
 *    read by every search (as before PostgreSQL kept them while notified; SQLite's path);
 *  - retrieval: KnowledgeService.retrieve(top_k 3), as a call's turn runs it (on PostgreSQL with
 *    the change notifications listening, as a server runs: the bases' content stamps are read once);
 *  - ingestion: the documents added through the service and ingested (chunked, stored, indexed),
 *    in pages of 500 words per second, beside the chunker alone on the same text (its baseline).
 * And once, with no store: the in-process ranking alone over the same chunks (rankChunks), with
 * section and passage evidence (as retrieval ranks), with passage evidence only, and BM25F alone,
 * alternated query by query. (Each section here is one chunk: the section evidence's cost is at
 * its most, a second pass over as many postings.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/config.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { createSilentLogger } from '../src/lib/logger.ts';
import { chunkDocument } from '../src/domain/knowledge-chunks.ts';
import { KNOWLEDGE_LIMITS, queryTerms } from '../src/domain/knowledge-base.ts';
import { weightedQuery } from '../src/domain/knowledge-terms.ts';
import { KnowledgeRepository } from '../src/storage/knowledge.repository.ts';
import { ChunkIndex, rankChunks } from '../src/storage/knowledge-index.ts';
import { findPostgresBin, startCluster } from '../scripts/postgres.ts';
import { fmt, machine, percentile } from './lib.ts';

export interface KnowledgeBenchOptions {
  chunks?: number;
  queries?: number;
  stores?: Array<'sqlite' | 'postgres'>;
  log: (line: string) => void;
}

const WORDS_PER_SECTION = 280;
const WORDS_PER_PAGE = 500;

/** A deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'sa', 'tor', 'vel', 'dun', 'pha', 'gri', 'bel', 'mon', 'qua', 'sti', 'nor', 'ex', 'ul', 'tra', 'fen', 'cor'];

function vocabulary(size: number): string[] {
  const words = new Set<string>();
  const next = random(7);
  while (words.size < size) {
    const n = 2 + Math.floor(next() * 3);
    words.add(Array.from({ length: n }, () => SYLLABLES[Math.floor(next() * SYLLABLES.length)]).join(''));
  }
  return [...words];
}

/** Word picker with Zipf frequencies (s = 1) over the vocabulary. */
function zipf(words: readonly string[], next: () => number): () => string {
  const cumulative: number[] = [];
  let total = 0;
  for (let i = 0; i < words.length; i++) cumulative.push((total += 1 / (i + 1)));
  return () => {
    const x = next() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return words[lo]!;
  };
}

interface Corpus {
  documents: Array<{ name: string; body: string }>;
  sections: string[];
  words: number;
}

function corpus(chunks: number): Corpus {
  const next = random(42);
  const word = zipf(vocabulary(8_000), next);
  const perDocument = Math.ceil(chunks / KNOWLEDGE_LIMITS.sourcesPerBase);
  const documents: Corpus['documents'] = [];
  const sections: string[] = [];
  for (let d = 0; documents.length * perDocument < chunks; d++) {
    const parts: string[] = [`# Document ${d}`];
    for (let s = 0; s < perDocument && sections.length < chunks; s++) {
      const sentences: string[] = [];
      for (let w = 0; w < WORDS_PER_SECTION; w += 14) sentences.push(`${Array.from({ length: 14 }, word).join(' ')}.`);
      const text = sentences.join(' ');
      sections.push(text);
      parts.push(`## Section ${d}.${s} ${word()} ${word()}`, text);
    }
    documents.push({ name: `doc-${d}.md`, body: parts.join('\n\n') });
  }
  return { documents, sections, words: sections.length * WORDS_PER_SECTION };
}

function questions(sections: readonly string[], count: number): string[] {
  const next = random(9);
  return Array.from({ length: count }, () => {
    const words = sections[Math.floor(next() * sections.length)]!.replace(/\./g, '').split(' ');
    const n = 3 + Math.floor(next() * 4);
    const start = Math.floor(next() * (words.length - n));
    return `what about the ${words.slice(start, start + n).join(' ')} please?`;
  });
}

interface Row {
  store: string;
  what: string;
  p50: number;
  p99: number;
  extra: string;
}

async function benchStore(store: 'sqlite' | 'postgres', o: { chunks: number; queries: number }, data: Corpus, log: (l: string) => void): Promise<Row[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-kbbench-'));
  let cluster: { url: string; stop(): void } | null = null;
  let runtime: Runtime | null = null;
  try {
    const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
    if (store === 'postgres') {
      const bin = findPostgresBin();
      if (!bin) throw new Error('PostgreSQL server binaries not found');
      cluster = await startCluster(bin);
      env.DATABASE_URL = cluster.url;
      env.WEBHOOK_SECRET_KEYS = randomBytes(32).toString('base64');
    }
    runtime = await createRuntime(loadConfig(env), { logger: createSilentLogger() });
    // As main.ts does: on PostgreSQL the change notifications keep the bases' content stamps between searches.
    await runtime.notifications.start();
    const knowledge = runtime.services.knowledge;
    const account = await runtime.services.accounts.createAccount({ name: 'bench' });
    const kb = await knowledge.createKnowledgeBase(account.account_id, { knowledge_base_name: 'bench' });

    // Ingestion: the service path (stored, chunked, inserted, indexed), timed to the last source.
    log(`knowledge ${store}: ingesting ${data.documents.length} documents`);
    const started = performance.now();
    for (let i = 0; i < data.documents.length; i += KNOWLEDGE_LIMITS.sourcesPerRequest) {
      const files = data.documents.slice(i, i + KNOWLEDGE_LIMITS.sourcesPerRequest).map((d) => ({ file_name: d.name, content_base64: Buffer.from(d.body).toString('base64') }));
      await knowledge.addSources(account.account_id, kb.knowledge_base_id, { knowledge_base_files: files });
    }
    await knowledge.settled();
    const ingestS = (performance.now() - started) / 1000;
    const view = await knowledge.getKnowledgeBase(account.account_id, kb.knowledge_base_id);
    const stored = view.knowledge_base_sources.reduce((n, s) => n + s.chunk_count, 0);
    if (view.status !== 'complete' || stored < o.chunks) throw new Error(`ingestion ended ${view.status} with ${stored} chunks`);
    const pages = data.words / WORDS_PER_PAGE;

    const ids = (await runtime.store.db.selectFrom('knowledge_base_chunks').select('id').execute()).map((r) => Number(r.id));
    const asked = questions(data.sections, o.queries);
    const time = async (run: (i: number) => Promise<unknown>) => {
      for (let i = 0; i < 50; i++) await run(i); // warm-up: statement caches, JIT, pages in memory
      const ms: number[] = [];
      for (let i = 0; i < o.queries; i++) {
        const t = performance.now();
        await run(i);
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b);
    };
    const db = runtime.store.db;
    const baseline = await time((i) => db.selectFrom('knowledge_base_chunks').select(['id', 'text']).where('id', '=', ids[(i * 7919) % ids.length]!).executeTakeFirst());
    // The store's own ranking (the path every search took before the in-process index; now only
    // for bases too large to index), measured in the same run for the ratio.
    const inStore = new KnowledgeRepository(runtime.store);
    const storeRanked = await time((i) => inStore.searchInStore([kb.knowledge_base_id], queryTerms(asked[i % asked.length]!), 3));
    // Retrieval with the bases' content stamps read at every search (the path before they were
    // kept while notified; still SQLite's), for the ratio in the same run.
    const unkept = await time((i) => inStore.search([kb.knowledge_base_id], weightedQuery([asked[i % asked.length]!]), 3));
    let found = 0;
    const retrieval = await time(async (i) => {
      const chunks = await knowledge.retrieve([kb.knowledge_base_id], asked[i % asked.length]!, { top_k: 3 });
      if (chunks.length > 0) found++;
    });
    return [
      { store, what: 'baseline: one chunk by primary key', p50: percentile(baseline, 50), p99: percentile(baseline, 99), extra: '' },
      { store, what: `ranked in the store (FTS5 / tsvector, the path before), top 3 of ${stored} chunks`, p50: percentile(storeRanked, 50), p99: percentile(storeRanked, 99), extra: '' },
      { store, what: 'retrieval, stamps read at every search (before)', p50: percentile(unkept, 50), p99: percentile(unkept, 99), extra: '' },
      {
        store,
        what: `retrieval, top 3 of ${stored} chunks`,
        p50: percentile(retrieval, 50),
        p99: percentile(retrieval, 99),
        extra: `${Math.round((100 * found) / (o.queries + 50))} % of queries found chunks`,
      },
      { store, what: 'ingestion', p50: NaN, p99: NaN, extra: `${fmt(pages / ingestS, 0)} pages/s (${fmt(pages, 0)} pages of ${WORDS_PER_PAGE} words in ${fmt(ingestS)} s)` },
    ];
  } finally {
    await runtime?.close();
    cluster?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The in-process ranking alone over all the corpus's chunks, top 3: as retrieval ranks (section
 * and passage evidence), with passage evidence only (before section evidence) and with BM25F alone
 * (before both), alternated query by query so all see the same load; and the index's build (with
 * its passages and sections).
 */
function rankingAlone(o: { queries: number }, data: Corpus): Row[] {
  let id = 0;
  const chunks = data.documents.flatMap((d) => chunkDocument(d.name, d.body, 'markdown').map((c) => ({ id: ++id, heading: c.heading, text: c.text, sourceId: d.name })));
  const built = performance.now();
  const index = new ChunkIndex(chunks);
  const buildMs = performance.now() - built;
  const asked = questions(data.sections, o.queries).map((q) => weightedQuery([q]));
  const variants = [
    { options: { passageWeight: 0, sectionWeight: 0 }, times: [] as number[] },
    { options: { sectionWeight: 0 }, times: [] as number[] },
    { options: {}, times: [] as number[] },
  ];
  for (let i = 0; i < 50 + o.queries; i++) {
    const query = asked[i % asked.length]!;
    for (const variant of variants) {
      const t = performance.now();
      rankChunks([index], query, 3, variant.options);
      if (i >= 50) variant.times.push(performance.now() - t);
    }
  }
  const [alone, passages, now] = variants.map((v) => v.times.sort((x, y) => x - y));
  const ratio = (times: number[]) => fmt(percentile(times, 50) / percentile(alone!, 50), 2);
  return [
    { store: '(none)', what: `ranking alone, BM25F (before passage evidence), top 3 of ${chunks.length} chunks (${index.sections} sections)`, p50: percentile(alone!, 50), p99: percentile(alone!, 99), extra: '' },
    { store: '(none)', what: 'ranking alone, with passage evidence (before section evidence)', p50: percentile(passages!, 50), p99: percentile(passages!, 99), extra: `${ratio(passages!)}x BM25F alone at p50` },
    { store: '(none)', what: 'ranking alone, with section and passage evidence (now)', p50: percentile(now!, 50), p99: percentile(now!, 99), extra: `${ratio(now!)}x BM25F alone at p50; index built in ${fmt(buildMs, 0)} ms` },
  ];
}

export async function runKnowledgeBench(options: KnowledgeBenchOptions): Promise<string> {
  const o = { chunks: options.chunks ?? 10_000, queries: options.queries ?? 500 };
  const data = corpus(o.chunks);
  // The chunker alone on the same text: ingestion's CPU floor.
  const t = performance.now();
  for (const document of data.documents) chunkDocument(document.name, document.body, 'markdown');
  const chunkerPagesPerS = data.words / WORDS_PER_PAGE / ((performance.now() - t) / 1000);
  const rows: Row[] = [...rankingAlone(o, data)];
  for (const store of options.stores ?? ['sqlite', 'postgres']) rows.push(...(await benchStore(store, o, data, options.log)));
  const lines = [
    `${machine()}; ${o.queries} queries of 3-6 words (+ stopwords) over ${o.chunks} chunks of ${WORDS_PER_SECTION} words (Zipf vocabulary of 8,000 words)`,
    '',
    '| store | what | p50 ms | p99 ms | notes |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.store} | ${r.what} | ${Number.isNaN(r.p50) ? '' : fmt(r.p50, 2)} | ${Number.isNaN(r.p99) ? '' : fmt(r.p99, 2)} | ${r.extra} |`),
    `| (both) | chunker alone (ingestion baseline) | | | ${fmt(chunkerPagesPerS, 0)} pages/s |`,
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const stores = arg('stores')?.split(',') as Array<'sqlite' | 'postgres'> | undefined;
  process.stdout.write(
    `${await runKnowledgeBench({ chunks: Number(arg('chunks') ?? 10_000), queries: Number(arg('queries') ?? 500), ...(stores ? { stores } : {}), log: (l) => process.stderr.write(`${l}\n`) })}\n`,
  );
}
