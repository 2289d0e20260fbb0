/**
 * A call's knowledge bases as the engines' reference material (issue 29): the TurnContextSource
 * (voice/engines/context.ts) of an engine whose definition names `knowledge_base_ids`. Each turn
 * searches with the caller's last words and hands the best chunks to the engine, which puts them
 * in its LLM request as reference material, never as instructions.
 */
import type { EngineSnapshot } from '../domain/agent.ts';
import type { KbConfig, RetrievedChunk } from '../domain/knowledge-base.ts';
import type { TurnContext, TurnContextSource, TurnQuery } from '../voice/index.ts';

/** The caller's turns a search reads, newest last: the last one and the one before it. */
export const QUERY_USER_TURNS = 2;
/** A search that takes longer is given up: the turn goes on without reference material. */
export const RETRIEVAL_TIMEOUT_MS = 1_000;

/** What retrieval needs of the knowledge service. */
export interface KnowledgeRetriever {
  ownedBases(accountId: string, ids: readonly string[]): Promise<readonly string[]>;
  retrieve(baseIds: readonly string[], query: string, config?: KbConfig): Promise<RetrievedChunk[]>;
}

/** The knowledge bases and retrieval settings of an engine, or null when it names none. */
export function engineKnowledge(engine: EngineSnapshot): { ids: readonly string[]; config: KbConfig } | null {
  if (engine.type !== 'service_llm') return null;
  const ids = engine.definition.knowledge_base_ids ?? [];
  return ids.length === 0 ? null : { ids, config: engine.definition.kb_config ?? {} };
}

const NOTHING: TurnContext = Object.freeze({ passages: Object.freeze([]) });

/**
 * The source of one call. The bases are checked to be the call's account's on the first search
 * (one deleted since the agent was saved is left out). Failures and timeouts find nothing and go
 * to `onFailure`; `onChunks` hears which chunks each turn used (for the call's record).
 */
export function knowledgeContextSource(options: {
  accountId: string;
  ids: readonly string[];
  config: KbConfig;
  retriever: KnowledgeRetriever;
  onFailure: (error: unknown) => void;
  onChunks?: (chunks: readonly RetrievedChunk[]) => void;
}): TurnContextSource {
  let owned: Promise<readonly string[]> | undefined;
  const search = async (query: string): Promise<TurnContext> => {
    owned ??= options.retriever.ownedBases(options.accountId, options.ids);
    const chunks = await options.retriever.retrieve(await owned, query, options.config);
    options.onChunks?.(chunks);
    return { passages: chunks.map((c) => ({ text: c.text, ...(c.heading ? { source: c.heading } : {}) })) };
  };
  return {
    async contextFor(turn: TurnQuery, signal: AbortSignal): Promise<TurnContext> {
      const query = callerWords(turn);
      if (query === '') return NOTHING;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<TurnContext>((resolve) => {
        timer = setTimeout(() => {
          options.onFailure(new Error(`knowledge retrieval took over ${RETRIEVAL_TIMEOUT_MS} ms`));
          resolve(NOTHING);
        }, RETRIEVAL_TIMEOUT_MS);
      });
      const aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      const found = search(query).catch((error: unknown) => {
        options.onFailure(error);
        return NOTHING;
      });
      try {
        return await Promise.race([found, timeout, aborted]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The caller's last QUERY_USER_TURNS turns (this one included), oldest first. */
function callerWords(turn: TurnQuery): string {
  if (turn.userText.trim() === '') return '';
  const said = turn.history.filter((m) => m.role === 'user' && typeof m.content === 'string').map((m) => m.content as string);
  const last = said.slice(-QUERY_USER_TURNS);
  if (last.at(-1) !== turn.userText) last.push(turn.userText);
  return last.slice(-QUERY_USER_TURNS).join(' ');
}
