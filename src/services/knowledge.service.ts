import { Type, type Static } from '@sinclair/typebox';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { Logger } from '../lib/logger.ts';
import { errors } from '../domain/errors.ts';
import {
  DEFAULT_TOP_K,
  KNOWLEDGE_BASE_STATUSES,
  KNOWLEDGE_LIMITS,
  SOURCE_TYPES,
  FILE_FORMATS_TEXT,
  documentFormat,
  fetchedFormat,
  type KbConfig,
  type KnowledgeBaseCreateInput,
  type KnowledgeBaseStatus,
  type KnowledgeSearchInput,
  type KnowledgeSourcesAddInput,
  type KnowledgePassage,
  type RetrievedChunk,
} from '../domain/knowledge-base.ts';
import { chunkDocument, type DocumentChunk } from '../domain/knowledge-chunks.ts';
import { weightedQuery, type QueryTerm } from '../domain/knowledge-terms.ts';
import { FUSION_CANDIDATES, fuseRanks, type Embedder } from '../domain/knowledge-embeddings.ts';
import { extractDocument, fetchUrlDocument, type UrlFetcher } from './knowledge-documents.ts';
import { KnowledgeRefresher } from './knowledge-refresh.ts';
import type { DestinationCheck } from './webhook-url.ts';
import { Nullable } from '../domain/schema-kit.ts';
import type { ChunkVectors, KnowledgeBaseRow, KnowledgeRepository, KnowledgeSourceRow, NewKnowledgeSource } from '../storage/knowledge.repository.ts';
import type { Store } from '../storage/store.ts';

export const KnowledgeSourceResponse = Type.Object(
  {
    type: Type.Union(SOURCE_TYPES.map((t) => Type.Literal(t))),
    source_id: Type.String(),
    title: Type.Optional(Type.String({ description: 'type text: its title.' })),
    filename: Type.Optional(Type.String({ description: 'type document: the file name.' })),
    url: Type.Optional(Type.String({ description: 'type url: the address.' })),
    status: Type.Union(KNOWLEDGE_BASE_STATUSES.map((s) => Type.Literal(s))),
    error: Nullable(Type.String({ description: 'Why ingestion failed (status error).' })),
    chunk_count: Type.Integer(),
    created_timestamp: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'KnowledgeBaseSource' },
);
export type KnowledgeSourceView = Static<typeof KnowledgeSourceResponse>;

export const KnowledgeBaseResponse = Type.Object(
  {
    knowledge_base_id: Type.String(),
    knowledge_base_name: Type.String(),
    status: Type.Union(KNOWLEDGE_BASE_STATUSES.map((s) => Type.Literal(s)), {
      description: 'in_progress while a source is being ingested; error when a source failed (see its error); complete otherwise.',
    }),
    knowledge_base_sources: Type.Array(KnowledgeSourceResponse),
    enable_auto_refresh: Type.Boolean({ description: 'Its URL sources are fetched again every 12 hours.' }),
    last_refreshed_timestamp: Type.Integer({ description: 'Epoch milliseconds: the last change of its sources.' }),
  },
  { title: 'KnowledgeBase' },
);
export type KnowledgeBaseView = Static<typeof KnowledgeBaseResponse>;

export const KnowledgeSearchResponse = Type.Object(
  {
    chunks: Type.Array(
      Type.Object({
        text: Type.String({ description: 'The chunk, its headings first.' }),
        score: Type.Number({ description: 'Relevance in (0, 1], higher is better; comparable within one server store.' }),
        source_id: Type.String(),
      }),
    ),
  },
  { title: 'KnowledgeBaseSearchResult' },
);
export type KnowledgeSearchView = Static<typeof KnowledgeSearchResponse>;

export interface KnowledgeServiceDeps {
  store: Store;
  knowledge: KnowledgeRepository;
  clock: Clock;
  log: Logger;
  /** The embeddings endpoint (EMBEDDINGS_BASE_URL): hybrid retrieval; absent, retrieval is lexical only. */
  embedder?: Embedder | null;
  /** Fetches URL sources through the destination policy (src/webhooks/document-fetcher.ts). */
  fetcher: UrlFetcher;
  /** The same policy's verdict on a URL's host when it is added (IP literals, localhost names). */
  destinations: DestinationCheck;
}

/** Longest wait for a query's vector, and for the vectors to be read; then the turn is ranked lexically alone. */
export const QUERY_EMBEDDING_TIMEOUT_MS = 800;
/** Longest time embedding one source's chunks may take, all requests and retries together. */
export const SOURCE_EMBEDDING_TIMEOUT_MS = 300_000;

/**
 * Knowledge bases: their sources are stored at once and ingested in the background (one at a time,
 * in order), so create and add answer with status in_progress; a source left in progress by a
 * stopped server is ingested again when the next one starts (`resume`).
 */
export class KnowledgeService {
  readonly #d: KnowledgeServiceDeps;
  readonly #refresher: KnowledgeRefresher;
  readonly #queue: Array<{ baseId: string; sourceId: string }> = [];
  #draining: Promise<void> | null = null;
  #closed = false;
  /** Aborts the embedding requests of the source being ingested, at close. */
  readonly #closing = new AbortController();

  constructor(deps: KnowledgeServiceDeps) {
    this.#d = deps;
    const embedder = deps.embedder;
    this.#refresher = new KnowledgeRefresher({
      ...deps,
      embed: embedder ? async (chunks) => {
        const vectors = await this.#embed(embedder, chunks);
        return typeof vectors === 'string' ? vectors : { model: embedder.model, vectors };
      } : undefined,
    });
  }

  async createKnowledgeBase(accountId: string, input: KnowledgeBaseCreateInput): Promise<KnowledgeBaseView> {
    const now = this.#d.clock.now();
    const base: KnowledgeBaseRow = {
      id: newId('knowledgeBase'),
      account_id: accountId,
      name: input.knowledge_base_name,
      auto_refresh: input.enable_auto_refresh === true ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    const sources = this.#newSources(base.id, input, now);
    await this.#d.store.transaction(async (tx) => {
      if ((await this.#d.knowledge.countBases(accountId, tx)) >= KNOWLEDGE_LIMITS.basesPerAccount) {
        throw errors.knowledgeBaseLimitReached(`An account can have at most ${KNOWLEDGE_LIMITS.basesPerAccount} knowledge bases; delete one first.`);
      }
      await this.#d.knowledge.insertBase(base, tx);
      await this.#d.knowledge.insertSources(sources, tx);
    });
    this.#enqueue(sources);
    return toView(base, sources);
  }

  async addSources(accountId: string, baseId: string, input: KnowledgeSourcesAddInput): Promise<KnowledgeBaseView> {
    const now = this.#d.clock.now();
    const sources = this.#newSources(baseId, input, now);
    if (sources.length === 0) throw errors.invalidRequest('body: give at least one source in knowledge_base_texts, knowledge_base_files or knowledge_base_urls');
    const view = await this.#d.store.transaction(async (tx) => {
      const row = await this.#d.knowledge.lockBase(accountId, baseId, tx);
      if (!row) throw errors.knowledgeBaseNotFound(baseId);
      if ((await this.#d.knowledge.countSources(baseId, tx)) + sources.length > KNOWLEDGE_LIMITS.sourcesPerBase) {
        throw errors.knowledgeBaseLimitReached(`A knowledge base can have at most ${KNOWLEDGE_LIMITS.sourcesPerBase} sources; delete some first.`);
      }
      await this.#d.knowledge.insertSources(sources, tx);
      await this.#d.knowledge.touchBase(baseId, now, tx);
      return toView({ ...row, updated_at: now }, await this.#d.knowledge.listSources([baseId], tx));
    });
    this.#enqueue(sources);
    return view;
  }

  async getKnowledgeBase(accountId: string, baseId: string): Promise<KnowledgeBaseView> {
    const base = await this.#d.knowledge.findBase(accountId, baseId);
    if (!base) throw errors.knowledgeBaseNotFound(baseId);
    return toView(base, await this.#d.knowledge.listSources([baseId]));
  }

  /** Oldest first. */
  async listKnowledgeBases(accountId: string): Promise<KnowledgeBaseView[]> {
    const bases = await this.#d.knowledge.listBases(accountId);
    const sources = await this.#d.knowledge.listSources(bases.map((b) => b.id));
    return bases.map((base) => toView(base, sources.filter((s) => s.knowledge_base_id === base.id)));
  }

  async deleteKnowledgeBase(accountId: string, baseId: string): Promise<void> {
    await this.#d.store.transaction(async (tx) => {
      if (!(await this.#d.knowledge.lockBase(accountId, baseId, tx))) throw errors.knowledgeBaseNotFound(baseId);
      await this.#d.knowledge.deleteBase(baseId, tx);
    });
  }

  async deleteSource(accountId: string, baseId: string, sourceId: string): Promise<KnowledgeBaseView> {
    const now = this.#d.clock.now();
    const base = await this.#d.store.transaction(async (tx) => {
      const row = await this.#d.knowledge.lockBase(accountId, baseId, tx);
      if (!row) throw errors.knowledgeBaseNotFound(baseId);
      if (!(await this.#d.knowledge.findSource(baseId, sourceId, tx))) throw errors.knowledgeSourceNotFound(sourceId);
      await this.#d.knowledge.deleteSource(baseId, sourceId, tx);
      await this.#d.knowledge.touchBase(baseId, now, tx);
      return { ...row, updated_at: now };
    });
    return toView(base, await this.#d.knowledge.listSources([baseId]));
  }

  /** POST /search-knowledge-base/{id}: the chunks a call would retrieve for `query`, best first. */
  async search(accountId: string, baseId: string, input: KnowledgeSearchInput): Promise<KnowledgeSearchView> {
    if (!(await this.#d.knowledge.findBase(accountId, baseId))) throw errors.knowledgeBaseNotFound(baseId);
    const chunks = await this.retrieve([baseId], input.query, { top_k: input.top_k ?? DEFAULT_TOP_K });
    return { chunks: chunks.map((c) => ({ text: passageText(c), score: c.score, source_id: c.source_id })) };
  }

  /**
   * The chunks of `baseIds` (already checked to be the caller's) that best answer `query` (a
   * question, or the caller's last turns, oldest first: earlier turns weigh less, knowledge-terms.ts),
   * best first: at most `top_k` (default 3), none scoring below `filter_score` (default 0).
   * Lexical; with an embedder, the lexical ranking fused with the vector ranking (`#hybrid`).
   */
  async retrieve(baseIds: readonly string[], query: string | readonly string[], config: KbConfig = {}): Promise<KnowledgePassage[]> {
    const turns = typeof query === 'string' ? [query] : query;
    const text = turns.join(' ').slice(-KNOWLEDGE_LIMITS.queryChars);
    const terms = weightedQuery(turns.map((turn) => turn.slice(-KNOWLEDGE_LIMITS.queryChars)));
    const topK = config.top_k ?? DEFAULT_TOP_K;
    const embedder = this.#d.embedder;
    const chunks = embedder ? await this.#hybrid(embedder, baseIds, text, terms, topK) : await this.#d.knowledge.search(baseIds, terms, topK);
    const floor = config.filter_score ?? 0;
    return this.#withBases(baseIds, chunks.filter((c) => c.score >= floor));
  }

  /** Each chunk with its knowledge base: the one searched, or (several) its source's; a source deleted meanwhile drops its chunks. */
  async #withBases(baseIds: readonly string[], chunks: readonly RetrievedChunk[]): Promise<KnowledgePassage[]> {
    const only = baseIds.length === 1 ? baseIds[0] : undefined;
    if (only !== undefined) return chunks.map((c) => ({ ...c, knowledge_base_id: only }));
    const bases = await this.#d.knowledge.sourceBases([...new Set(chunks.map((c) => c.source_id))]);
    return chunks.flatMap((c) => {
      const base = bases.get(c.source_id);
      return base === undefined ? [] : [{ ...c, knowledge_base_id: base }];
    });
  }

  /**
   * The best `topK` chunks by reciprocal rank fusion of the lexical ranking and the vector
   * ranking (FUSION_CANDIDATES of each), scored in (0, 1] (1: first in both). When the query
   * cannot be embedded, or the vectors read, within QUERY_EMBEDDING_TIMEOUT_MS (the endpoint
   * failing or slow; a base set too large to keep), the lexical ranking alone, with its own scores.
   */
  async #hybrid(embedder: Embedder, baseIds: readonly string[], text: string, terms: readonly QueryTerm[], topK: number): Promise<RetrievedChunk[]> {
    if (baseIds.length === 0 || text.trim() === '') return [];
    const deadline = performance.now() + QUERY_EMBEDDING_TIMEOUT_MS;
    const [lexical, vector] = await Promise.all([
      this.#d.knowledge.search(baseIds, terms, FUSION_CANDIDATES),
      embedder.embedQuery(text, AbortSignal.timeout(QUERY_EMBEDDING_TIMEOUT_MS)).catch((error: unknown) => {
        // The query is the caller's words: never logged.
        this.#d.log.warn({ err: error }, 'knowledge query not embedded; ranked lexically');
        return null;
      }),
    ]);
    if (vector === null) return lexical.slice(0, topK);
    const nearest = await this.#d.knowledge.nearest(baseIds, embedder.model, vector, FUSION_CANDIDATES, deadline);
    if (nearest === null) {
      this.#d.log.warn({ baseIds }, 'knowledge vectors not read in time; ranked lexically');
      return lexical.slice(0, topK);
    }
    const fused = fuseRanks([lexical.map((c) => c.chunk_id), nearest.map((n) => n.id)]).slice(0, topK);
    const byId = new Map(lexical.map((c) => [c.chunk_id, c]));
    const missing = fused.filter((f) => !byId.has(f.id)).map((f) => f.id);
    for (const chunk of await this.#d.knowledge.chunksByIds(missing)) byId.set(chunk.chunk_id, chunk);
    return fused.flatMap((f) => {
      const chunk = byId.get(f.id);
      return chunk ? [{ ...chunk, score: f.score }] : [];
    });
  }

  /** Those of `ids` that name knowledge bases of the account. */
  async ownedBases(accountId: string, ids: readonly string[]): Promise<string[]> {
    return (await this.#d.knowledge.findBases(accountId, ids)).map((b) => b.id);
  }

  /** Queues the sources a stopped server left in progress; main.ts calls it at start. */
  async resume(): Promise<void> {
    const pending = await this.#d.knowledge.pendingSources(10_000);
    this.#enqueue(pending.map((s) => ({ id: s.id, knowledge_base_id: s.knowledge_base_id })));
  }

  /** Starts the periodic refresh of `enable_auto_refresh` URL sources (main.ts; knowledge-refresh.ts). */
  startRefreshing(checkEveryMs?: number): void {
    if (!this.#closed) this.#refresher.start(checkEveryMs);
  }

  /** Refreshes the URL sources due now; resolves with how many were refreshed (the periodic task, tests). */
  refreshDue(): Promise<number> {
    return this.#refresher.refreshDue();
  }

  /** Resolves when every queued source has been ingested (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /** Stops taking sources and waits for the one being ingested; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#queue.length = 0;
    this.#closing.abort();
    await this.#refresher.close();
    await this.settled();
  }

  #newSources(baseId: string, input: KnowledgeSourcesAddInput, now: number): NewKnowledgeSource[] {
    const texts = input.knowledge_base_texts ?? [];
    const files = input.knowledge_base_files ?? [];
    const urls = input.knowledge_base_urls ?? [];
    if (texts.length + files.length + urls.length > KNOWLEDGE_LIMITS.sourcesPerRequest) {
      throw errors.invalidRequest(`body: at most ${KNOWLEDGE_LIMITS.sourcesPerRequest} sources in one request`);
    }
    const common = { knowledge_base_id: baseId, url: null, status: 'in_progress' as const, error: null, created_at: now, updated_at: now };
    const rows: NewKnowledgeSource[] = [];
    // Ids sort by creation time, and sources are listed by id: within one millisecond the random
    // part decides, so the request's ids are handed out in sorted order to keep the sources' order.
    const ids = Array.from({ length: texts.length + files.length + urls.length }, () => newId('knowledgeSource')).sort();
    const nextId = () => ids.shift()!;
    texts.forEach((text, i) => {
      const body = new TextEncoder().encode(text.text);
      if (body.byteLength > KNOWLEDGE_LIMITS.sourceBytes) throw tooLarge(`knowledge_base_texts.${i}.text`);
      rows.push({ ...common, id: nextId(), type: 'text', title: text.title, format: 'text', body });
    });
    files.forEach((file, i) => {
      const format = documentFormat(file.file_name, file.content_type);
      if (format === null) {
        throw errors.invalidRequest(`knowledge_base_files.${i}: the file must be ${FILE_FORMATS_TEXT}`);
      }
      const body = Buffer.from(file.content_base64, 'base64');
      if (body.byteLength > KNOWLEDGE_LIMITS.sourceBytes) throw tooLarge(`knowledge_base_files.${i}.content_base64`);
      rows.push({ ...common, id: nextId(), type: 'document', title: file.file_name, format, body: new Uint8Array(body) });
    });
    urls.forEach((raw, i) => {
      const url = this.#checkUrl(raw, `knowledge_base_urls.${i}`);
      rows.push({ ...common, id: nextId(), type: 'url', title: url, url, format: fetchedFormat(null, url) ?? 'html', body: null });
    });
    return rows;
  }

  /**
   * An address a URL source may have: absolute http(s), without whitespace or credentials, and
   * not to a host the destination policy refuses outright (an IP literal, a localhost name; names
   * are judged again on every address they resolve to, and so is every redirect, when fetched).
   */
  #checkUrl(raw: string, field: string): string {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw errors.invalidRequest(`${field} must be an absolute http or https URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw errors.invalidRequest(`${field} must be an absolute http or https URL`);
    if (/\s/.test(raw)) throw errors.invalidRequest(`${field} must not contain spaces`);
    if (url.username !== '' || url.password !== '') throw errors.invalidRequest(`${field} must not contain a user name or password`);
    const refused = this.#d.destinations.hostRefusal(url.hostname);
    if (refused) throw errors.invalidRequest(`${field} is not an address the server may fetch: ${refused}`);
    return url.href;
  }

  #enqueue(sources: ReadonlyArray<{ id: string; knowledge_base_id: string }>): void {
    if (this.#closed) return;
    for (const source of sources) this.#queue.push({ baseId: source.knowledge_base_id, sourceId: source.id });
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = null;
    });
  }

  async #drain(): Promise<void> {
    for (let next = this.#queue.shift(); next; next = this.#queue.shift()) {
      try {
        await this.#ingest(next.baseId, next.sourceId);
      } catch (error) {
        // The store failed: the source stays in progress and is ingested again at the next start.
        this.#d.log.warn({ err: error, sourceId: next.sourceId }, 'knowledge source ingestion failed');
      }
    }
  }

  async #ingest(baseId: string, sourceId: string): Promise<void> {
    const source = await this.#d.knowledge.findSource(baseId, sourceId);
    if (!source || source.status !== 'in_progress') return;
    const now = () => this.#d.clock.now();
    const fail = (error: string) => this.#d.knowledge.failSource(sourceId, error, now());
    let format = source.format;
    let body: Uint8Array | null | undefined;
    let charset: string | undefined;
    if (source.type === 'url') {
      const fetched = await fetchUrlDocument(this.#d.fetcher, source.url ?? source.title);
      if (!fetched.ok) {
        if (fetched.detail) this.#d.log.info({ sourceId, detail: fetched.detail }, 'knowledge url refused');
        return fail(fetched.error);
      }
      ({ format, body, charset } = fetched);
    } else {
      body = await this.#d.knowledge.sourceBody(sourceId);
    }
    if (!body) return fail('The document is empty.');
    const document = await extractDocument(format, body, charset);
    if (!document.ok) return fail(document.error);
    const title = source.type === 'text' ? source.title : source.type === 'url' ? (document.title ?? source.title) : stripExtension(source.title);
    const chunks = chunkDocument(title, document.text, document.chunkAs);
    if (chunks.length === 0) return fail('The document has no text.');
    let embedded: ChunkVectors | undefined;
    if (this.#d.embedder) {
      const vectors = await this.#embed(this.#d.embedder, chunks);
      // Closing: the source stays in progress, for the next start.
      if (this.#closing.signal.aborted) return;
      if (typeof vectors === 'string') return fail(vectors);
      embedded = { model: this.#d.embedder.model, vectors };
    }
    await this.#d.store.transaction(async (tx) => {
      // The base's row lock orders this against deletes and other ingestions of the same base.
      const base = await this.#d.knowledge.lockBaseById(baseId, tx);
      if (!base) return;
      const total = (await this.#d.knowledge.countChunks(baseId, tx)) + chunks.length;
      if (total > KNOWLEDGE_LIMITS.chunksPerBase) {
        const message = `The knowledge base would pass ${KNOWLEDGE_LIMITS.chunksPerBase} chunks (knowledge_base_full); split it or delete sources.`;
        await this.#d.knowledge.failSource(sourceId, message, now(), tx);
        return;
      }
      await this.#d.knowledge.completeSource(baseId, sourceId, chunks, now(), tx, embedded, format);
    });
  }

  /** The chunks' vectors (each embedded as it is shown: headings, then text), or why they could not be had, for the source's owner. */
  async #embed(embedder: Embedder, chunks: readonly DocumentChunk[]): Promise<Float32Array[] | string> {
    try {
      return await embedder.embedDocuments(
        chunks.map((chunk) => passageText(chunk)),
        AbortSignal.any([this.#closing.signal, AbortSignal.timeout(SOURCE_EMBEDDING_TIMEOUT_MS)]),
      );
    } catch (error) {
      this.#d.log.warn({ err: error }, 'knowledge source not embedded');
      return `The chunks could not be embedded: the embeddings endpoint ${embeddingFailure(error)}.`;
    }
  }
}

/** What went wrong with the embeddings endpoint, in words without its answer's content. */
function embeddingFailure(error: unknown): string {
  const { status, retryable, name } = (typeof error === 'object' && error !== null ? error : {}) as { status?: unknown; retryable?: unknown; name?: unknown };
  if (typeof status === 'number') return `answered HTTP ${status}`;
  if (name === 'TimeoutError' || name === 'AbortError') return `took longer than ${SOURCE_EMBEDDING_TIMEOUT_MS / 1000} s`;
  if (retryable === true) return 'could not be reached or timed out';
  return 'gave a malformed answer';
}

function tooLarge(field: string) {
  return errors.payloadTooLarge(`${field}: a source may hold at most ${KNOWLEDGE_LIMITS.sourceBytes} bytes`);
}

function stripExtension(fileName: string): string {
  return fileName.replace(/\.[A-Za-z0-9]+$/, '');
}

/** A chunk as a passage: its headings on the first line, then its text. */
export function passageText(chunk: Pick<RetrievedChunk, 'heading' | 'text'>): string {
  return chunk.heading === '' ? chunk.text : `${chunk.heading}\n${chunk.text}`;
}

function toView(base: KnowledgeBaseRow, sources: readonly Omit<KnowledgeSourceRow, 'chunk_count'>[] | readonly KnowledgeSourceRow[]): KnowledgeBaseView {
  const views = sources.map(toSourceView);
  const status: KnowledgeBaseStatus = views.some((s) => s.status === 'in_progress')
    ? 'in_progress'
    : views.some((s) => s.status === 'error')
      ? 'error'
      : 'complete';
  return {
    knowledge_base_id: base.id,
    knowledge_base_name: base.name,
    status,
    knowledge_base_sources: views,
    enable_auto_refresh: base.auto_refresh === 1,
    last_refreshed_timestamp: base.updated_at,
  };
}

function toSourceView(source: Omit<KnowledgeSourceRow, 'chunk_count'> & { chunk_count?: number }): KnowledgeSourceView {
  const named = source.type === 'text' ? { title: source.title } : source.type === 'document' ? { filename: source.title } : { url: source.url ?? source.title };
  return {
    type: source.type,
    source_id: source.id,
    ...named,
    status: source.status,
    error: source.error,
    chunk_count: source.chunk_count ?? 0,
    created_timestamp: source.created_at,
  };
}
