/**
 * A custom LLM's reference material (issue 29): the chunks its agent's knowledge bases hold for a
 * turn, found through the engine's context seam (context.ts) like a service LLM's, and sent to
 * the user's server as the `knowledge_base_chunks` extension field of response_required and
 * reminder_required (docs/custom-llm.md). They are data beside the transcript, never in it.
 */
import type { ChatMessage } from '../../providers/llm.ts';
import { askSource, type TurnContextSource, type TurnTimingOptions } from './context.ts';

/** One chunk as `knowledge_base_chunks` carries it, best first. */
export interface KnowledgeBaseChunk {
  text: string;
  /** Relevance in (0, 1]. */
  score: number;
  source_id: string;
  knowledge_base_id: string;
}

/**
 * The chunks found for the caller's `userText`, the conversation so far being `transcript`
 * (oldest first, this turn included). Rejects only when `signal` aborts.
 */
export async function knowledgeBaseChunks(
  source: TurnContextSource,
  userText: string,
  transcript: ReadonlyArray<{ role: 'agent' | 'user'; content: string }>,
  timing: TurnTimingOptions,
  signal: AbortSignal,
): Promise<KnowledgeBaseChunk[]> {
  const history: ChatMessage[] = transcript.map((u) => ({ role: u.role === 'agent' ? 'assistant' : 'user', content: u.content }));
  const found = await askSource(source, { userText, history }, timing, signal);
  return found.passages.map((p) => ({ text: p.text, score: p.score ?? 0, source_id: p.sourceId ?? '', knowledge_base_id: p.knowledgeBaseId ?? '' }));
}
