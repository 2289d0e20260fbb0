import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { PeriodicTask } from '../lib/periodic.ts';
import { AUTO_REFRESH_CHECK_MS, AUTO_REFRESH_INTERVAL_MS, AUTO_REFRESH_PER_ROUND, KNOWLEDGE_LIMITS } from '../domain/knowledge-base.ts';
import { chunkDocument, type DocumentChunk } from '../domain/knowledge-chunks.ts';
import type { ChunkVectors, KnowledgeRepository } from '../storage/knowledge.repository.ts';
import type { Store } from '../storage/store.ts';
import { extractDocument, fetchUrlDocument, type UrlFetcher } from './knowledge-documents.ts';

export interface KnowledgeRefreshDeps {
  store: Store;
  knowledge: KnowledgeRepository;
  fetcher: UrlFetcher;
  clock: Clock;
  log: Logger;
  /** Embeds refreshed chunks when an embeddings endpoint is configured: their vectors, or why not. */
  embed?: ((chunks: readonly DocumentChunk[]) => Promise<ChunkVectors | string>) | undefined;
}

/**
 * `enable_auto_refresh` (Retell's): the URL sources of such knowledge bases are fetched again every
 * AUTO_REFRESH_INTERVAL_MS (12 hours). A refresh replaces the source's chunks in one transaction, so
 * searches see the old chunks or the new, never none. A refresh that fails (the page gone, refused,
 * too large) keeps the chunks of the last good fetch and is tried again an interval later; it is
 * logged, and the source stays complete. Each due source is claimed by moving its `updated_at`
 * (compare-and-set), so servers sharing a store refresh it once.
 */
export class KnowledgeRefresher {
  readonly #d: KnowledgeRefreshDeps;
  #task: PeriodicTask | null = null;

  constructor(deps: KnowledgeRefreshDeps) {
    this.#d = deps;
  }

  /** Looks for due sources every `checkEveryMs` from now on (main.ts); idempotent. */
  start(checkEveryMs = AUTO_REFRESH_CHECK_MS): void {
    this.#task ??= new PeriodicTask(() => this.refreshDue(), checkEveryMs, (error) => this.#d.log.warn({ err: error }, 'knowledge refresh failed'));
  }

  /** Refreshes the sources due now (at most AUTO_REFRESH_PER_ROUND); resolves with how many were refreshed. */
  async refreshDue(): Promise<number> {
    const due = await this.#d.knowledge.dueRefreshes(this.#d.clock.now() - AUTO_REFRESH_INTERVAL_MS, AUTO_REFRESH_PER_ROUND);
    let refreshed = 0;
    for (const source of due) {
      if (!(await this.#d.knowledge.claimRefresh(source.id, source.updated_at, this.#d.clock.now()))) continue;
      if (await this.#refresh(source.knowledge_base_id, source.id, source.url ?? '')) refreshed += 1;
    }
    return refreshed;
  }

  async #refresh(baseId: string, sourceId: string, url: string): Promise<boolean> {
    const keep = (reason: string) => {
      this.#d.log.warn({ sourceId, reason }, 'knowledge url not refreshed; its last chunks are kept');
      return false;
    };
    const fetched = await fetchUrlDocument(this.#d.fetcher, url);
    if (!fetched.ok) return keep(fetched.error);
    const document = await extractDocument(fetched.format, fetched.body, fetched.charset);
    if (!document.ok) return keep(document.error);
    const chunks = chunkDocument(document.title ?? url, document.text, document.chunkAs);
    if (chunks.length === 0) return keep('no text');
    let embedded: ChunkVectors | undefined;
    if (this.#d.embed) {
      const vectors = await this.#d.embed(chunks);
      if (typeof vectors === 'string') return keep(vectors);
      embedded = vectors;
    }
    return this.#d.store.transaction(async (tx) => {
      if (!(await this.#d.knowledge.lockBaseById(baseId, tx))) return false;
      const source = await this.#d.knowledge.findSource(baseId, sourceId, tx);
      if (!source) return false;
      const total = (await this.#d.knowledge.countChunks(baseId, tx)) - source.chunk_count + chunks.length;
      if (total > KNOWLEDGE_LIMITS.chunksPerBase) return keep('knowledge_base_full');
      const now = this.#d.clock.now();
      if (!(await this.#d.knowledge.replaceChunks(baseId, sourceId, chunks, fetched.format, now, tx, embedded))) return false;
      await this.#d.knowledge.touchBase(baseId, now, tx);
      return true;
    });
  }

  /** Stops looking and waits for a round in progress; idempotent. */
  async close(): Promise<void> {
    await this.#task?.close();
  }
}
