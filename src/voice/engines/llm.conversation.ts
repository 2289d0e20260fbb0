/**
 * Where a service LLM's conversation is: everything a turn of LlmEngine changes, in one plain
 * object that a checkpoint copies whole (state.ts) and a rollback puts back whole.
 */
import type { ChatMessage, ChatToolCall } from '../../providers/llm.ts';
import { copyState, type CopyRules } from './state.ts';
import type { EngineEnding, EngineOutput, FunctionOutcome, ServiceLlmState } from './types.ts';

/** A round of function calls the model asked for, still running when its turn was cut short. */
export interface PendingRound {
  /** The calls of the round (functions, transitions, end_call). */
  calls: ChatToolCall[];
  /** The functions' outcomes by call id, once all are in. */
  results: Promise<ReadonlyMap<string, FunctionOutcome>>;
  records: Promise<EngineOutput[]>;
}

/** A service LLM's conversation state (LlmEngine). */
export interface LlmConversation {
  /** The state the conversation is in; none when the LLM has no states. */
  current: ServiceLlmState | undefined;
  /** The conversation as the model sees it, after the system prompt. */
  history: ChatMessage[];
  /** The model ended the call and its hang-up went out. */
  reachedEnd: boolean;
  /** How the model ended the call (end_call), recorded once. */
  ending: EngineEnding | undefined;
  /** A round whose wait was cut short by a barge-in: the next turn settles it first. */
  pending: PendingRound | undefined;
}

/**
 * How a checkpoint copies a service LLM's conversation: the state is the definition's own
 * (shared), a pending round holds its requests' promises (shared); the rest is data, copied deep.
 */
export const LLM_CONVERSATION_COPY: CopyRules<LlmConversation> = {
  current: 'shared',
  history: 'value',
  reachedEnd: 'value',
  ending: 'value',
  pending: 'shared',
};

/** A conversation about to begin in `start`. */
export function newLlmConversation(start: ServiceLlmState | undefined): LlmConversation {
  return { current: start, history: [], reachedEnd: false, ending: undefined, pending: undefined };
}

/** What a checkpoint saves, and a rollback puts back: a copy of the whole conversation (LLM_CONVERSATION_COPY). */
export function saveLlmConversation(conversation: LlmConversation): LlmConversation {
  return copyState(conversation, LLM_CONVERSATION_COPY);
}
