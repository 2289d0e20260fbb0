/**
 * A call's knowledge bases as the engines' reference material (issue 29): the TurnContextSource
 * (voice/engines/context.ts) of an engine whose definition names `knowledge_base_ids` (a service
 * LLM's, or a flow's `knowledge` nodes'). Each turn searches with the caller's last words and hands
 * the best chunks to the engine, which puts them in its LLM request as reference material, never
 * as instructions, or (a flow's knowledge node) speaks the best one's most relevant sentences.
 */
import type { EngineSnapshot } from '../domain/agent.ts';
import type { KbConfig, KnowledgePassage } from '../domain/knowledge-base.ts';
import type { ReferenceScope, TurnContext, TurnContextSource, TurnQuery } from '../voice/index.ts';

/** The caller's turns a search reads, newest last: the last one and the one before it. */
export const QUERY_USER_TURNS = 2;
/** A search that takes longer is given up: the turn goes on without reference material. */
export const RETRIEVAL_TIMEOUT_MS = 1_000;

/** What retrieval needs of the knowledge service. */
export interface KnowledgeRetriever {
  ownedBases(accountId: string, ids: readonly string[]): Promise<readonly string[]>;
  /** `query`: a question, or the caller's last turns, oldest first (earlier turns weigh less). */
  retrieve(baseIds: readonly string[], query: string | readonly string[], config?: KbConfig): Promise<KnowledgePassage[]>;
}

/** An engine's knowledge bases: those every turn searches, with their settings, and all a turn's scope may name. */
export interface EngineKnowledge {
  /** Searched on every turn that asks an LLM (a service LLM's, a flow's own); [] when only scoped searches run (a flow's knowledge nodes). */
  ids: readonly string[];
  config: KbConfig;
  /** Every knowledge base the engine names: `ids` and those of a flow's knowledge nodes. */
  searchable: readonly string[];
}

/** The knowledge bases and retrieval settings of an engine, or null when it names none. */
export function engineKnowledge(engine: EngineSnapshot): EngineKnowledge | null {
  if (engine.type === 'conversation_flow') {
    // The flow's own bases serve its conversation nodes' LLM requests; its knowledge nodes search theirs (scoped).
    const { knowledge_base_ids: ids = [], kb_config: config = {}, nodes } = engine.definition;
    const searchable = [...new Set([...ids, ...nodes.flatMap((n) => (n.type === 'knowledge' ? (n.knowledge_base_ids ?? []) : []))])];
    return searchable.length === 0 ? null : { ids, config, searchable };
  }
  const { knowledge_base_ids: ids = [], kb_config: config = {} } = engine.type === 'custom_llm' ? engine : engine.definition;
  return ids.length === 0 ? null : { ids, config, searchable: ids };
}

const NOTHING: TurnContext = Object.freeze({ passages: Object.freeze([]) });

/**
 * The source of one call. The bases are checked to be the call's account's on the first search
 * (one deleted since the agent was saved is left out). Failures and timeouts find nothing and go
 * to `onFailure`; `onChunks` hears which chunks each turn used (for the call's record): a search
 * that outlived its turn's bound or its reply is not one the turn used.
 */
export function knowledgeContextSource(
  options: EngineKnowledge & {
    accountId: string;
    retriever: KnowledgeRetriever;
    onFailure: (error: unknown) => void;
    onChunks?: (chunks: readonly KnowledgePassage[]) => void;
  },
): TurnContextSource {
  let owned: Promise<ReadonlySet<string>> | undefined;
  type Found = TurnContext & { chunks?: readonly KnowledgePassage[] };
  const search = async (query: string | readonly string[], scope: ReferenceScope | undefined): Promise<Found> => {
    owned ??= options.retriever.ownedBases(options.accountId, options.searchable).then((ids) => new Set(ids));
    const mine = await owned;
    const bases = (scope ? scope.knowledgeBaseIds : options.ids).filter((id) => mine.has(id));
    if (bases.length === 0) return NOTHING;
    const config = scope ? scopedConfig(options.config, scope) : options.config;
    const chunks = await options.retriever.retrieve(bases, query, config);
    return {
      passages: chunks.map((c) => ({ text: c.text, ...(c.heading ? { source: c.heading } : {}), score: c.score, knowledgeBaseId: c.knowledge_base_id, sourceId: c.source_id })),
      chunks,
    };
  };
  return {
    async contextFor(turn: TurnQuery, signal: AbortSignal): Promise<TurnContext> {
      // A scoped search (a flow's knowledge node) answers this turn's words alone.
      const query = turn.scope ? turn.userText.trim() : callerWords(turn);
      if (query.length === 0) return NOTHING;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<Found>((resolve) => {
        timer = setTimeout(() => {
          options.onFailure(new Error(`knowledge retrieval took over ${RETRIEVAL_TIMEOUT_MS} ms`));
          resolve(NOTHING);
        }, RETRIEVAL_TIMEOUT_MS);
      });
      const aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      const found = search(query, turn.scope).catch((error: unknown): Found => {
        options.onFailure(error);
        return NOTHING;
      });
      try {
        const { chunks, ...context } = await Promise.race([found, timeout, aborted]);
        // Only a search the turn used is recorded: not one that came too late, nor one for a reply given up.
        if (chunks) options.onChunks?.(chunks);
        return context;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The engine's settings with what a scope sets over them. */
function scopedConfig(config: KbConfig, scope: ReferenceScope): KbConfig {
  const topK = scope.topK ?? config.top_k;
  const filterScore = scope.filterScore ?? config.filter_score;
  return { ...(topK !== undefined ? { top_k: topK } : {}), ...(filterScore !== undefined ? { filter_score: filterScore } : {}) };
}

/** The caller's last QUERY_USER_TURNS turns (this one included), oldest first. */
function callerWords(turn: TurnQuery): string[] {
  if (turn.userText.trim() === '') return [];
  const said = turn.history.filter((m) => m.role === 'user' && typeof m.content === 'string').map((m) => m.content as string);
  const last = said.slice(-QUERY_USER_TURNS);
  if (last.at(-1) !== turn.userText) last.push(turn.userText);
  return last.slice(-QUERY_USER_TURNS);
}
