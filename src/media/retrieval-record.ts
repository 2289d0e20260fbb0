/**
 * The knowledge-base searches of a call's turns, for the call object's `knowledge_base_retrieval`
 * entries (issue 29): each placed when its chunks were found, before the reply it fed. A search
 * made for a preemptive reply that is thrown away is taken back with the engine's rollback, as the
 * engine's own state is: the record keeps only the searches of replies the call went on with.
 */
import type { KnowledgePassage } from '../domain/knowledge-base.ts';
import { KNOWLEDGE_CHUNK_MAX_CHARS, KNOWLEDGE_RETRIEVALS_PER_CALL, overrideEngine, type ResponseEngine, type TimedRetrieval } from '../voice/index.ts';

export class RetrievalRecord {
  readonly #entries: TimedRetrieval[] = [];

  /** The searches kept, in order (bounded: KNOWLEDGE_RETRIEVALS_PER_CALL). */
  get entries(): readonly TimedRetrieval[] {
    return this.#entries;
  }

  /** A turn's search, placed at `atMs` (ms since the pipeline started); each chunk's text cut to KNOWLEDGE_CHUNK_MAX_CHARS. */
  keep(chunks: readonly KnowledgePassage[], atMs: number): void {
    if (this.#entries.length >= KNOWLEDGE_RETRIEVALS_PER_CALL) return;
    this.#entries.push({
      atMs,
      chunks: chunks.map((c) => ({ text: c.text.slice(0, KNOWLEDGE_CHUNK_MAX_CHARS), score: c.score, source_id: c.source_id, knowledge_base_id: c.knowledge_base_id })),
    });
  }

  /**
   * `engine`, whose checkpoints (taken for preemptive replies) also mark the record: restoring
   * one takes back the searches made since. Every other method is the engine's own.
   */
  rollingBack(engine: ResponseEngine): ResponseEngine {
    const checkpoint = engine.checkpoint?.bind(engine);
    if (!checkpoint) return engine;
    const entries = this.#entries;
    const marked = () => {
      const kept = entries.length;
      const restore = checkpoint();
      return () => {
        entries.length = Math.min(entries.length, kept);
        restore();
      };
    };
    return overrideEngine(engine, { checkpoint: marked });
  }
}
