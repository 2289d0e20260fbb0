/**
 * Where a flow's conversation is: everything a turn of FlowEngine changes, in one plain object
 * that a checkpoint copies whole (state.ts) and a rollback puts back whole.
 */
import type { ChatMessage } from '../../providers/llm.ts';
import { copyState, type CopyRules } from './state.ts';
import { variableMap } from './variables.ts';
import type { EngineEnding, FlowNode, FunctionOutcome, ToolCallRecord } from './types.ts';
import type { PendingTransfer } from './flow.phone.ts';

/** A function node's request still running when its turn was cut short (barge-in). */
export interface PendingFunction {
  node: FlowNode;
  toolCallId: string;
  outcome: Promise<FunctionOutcome>;
}

/** The result of a function not waited for, its variables stored, its record not sent yet. */
export interface LateResult {
  pending: PendingFunction;
  outcome: FunctionOutcome;
  record: ToolCallRecord;
}

/** A flow's conversation state (FlowEngine). */
export interface FlowConversation {
  /** The node the conversation is at. */
  current: FlowNode;
  /** Values extracted from the user's words and stored from function results (prototype-free, variables.ts). */
  extracted: Record<string, string>;
  /** Values of variables extracted with type 'name' (for PII redaction). */
  names: Set<string>;
  /** The conversation as the LLM sees it. */
  history: ChatMessage[];
  /** An end node was reached and its goodbye spoken. */
  reachedEnd: boolean;
  /** How the flow ended the conversation, decided on entering its end node. */
  ending: EngineEnding | undefined;
  /** The last edge chosen from a conversation node was its else edge: that node's id. */
  elseFrom: string | undefined;
  /** Function calls recorded so far (their ids: `tool_call_<n>`). */
  toolCallSeq: number;
  /** A waited-for function whose turn was interrupted: the next turn settles it first. */
  pending: PendingFunction | undefined;
  /**
   * Functions not waited for (`wait_for_result: false`) whose results came in: their variables are
   * stored at once, their result records go out with the next output.
   */
  late: LateResult[];
  /** The current node is a function node whose request was sent since it was entered. */
  functionSent: boolean;
  /**
   * The nodes entered, in order, the start node first (at most NODE_TRANSITIONS_PER_CALL + 1):
   * the call's path, with the nodes a reply passed through without waiting for the user.
   */
  path: string[];
  /** A transfer_call node's transfer asked for and not settled (flow.phone.ts). */
  transfer: PendingTransfer | undefined;
}

/**
 * How a checkpoint copies a flow's conversation: the node is the flow's own (shared), a pending
 * function holds its request's promise (shared), the late results are kept by identity (a new
 * list of the same entries); the rest is data, copied deep.
 */
export const FLOW_CONVERSATION_COPY: CopyRules<FlowConversation> = {
  current: 'shared',
  extracted: 'value',
  names: 'value',
  history: 'value',
  reachedEnd: 'value',
  ending: 'value',
  elseFrom: 'value',
  toolCallSeq: 'value',
  pending: 'shared',
  late: 'list',
  functionSent: 'value',
  path: 'value',
  transfer: 'value',
};

/** A conversation about to begin at `start`. */
export function newFlowConversation(start: FlowNode): FlowConversation {
  return {
    current: start,
    extracted: variableMap(),
    names: new Set(),
    history: [],
    reachedEnd: false,
    ending: undefined,
    elseFrom: undefined,
    toolCallSeq: 0,
    pending: undefined,
    late: [],
    functionSent: false,
    path: [],
    transfer: undefined,
  };
}

/** What a checkpoint saves: a copy of the whole conversation (FLOW_CONVERSATION_COPY). */
export function saveFlowConversation(conversation: FlowConversation): FlowConversation {
  return copyState(conversation, FLOW_CONVERSATION_COPY);
}

/**
 * What a rollback puts back: a copy of the `saved` conversation, except that the results of
 * functions not waited for that came in since (in `live`, not in `saved`) stay: they happened.
 * Their records are still to go out, after those saved; `arrived` lists them so that the engine
 * stores their variables again in the conversation put back.
 */
export function rollBackFlowConversation(saved: FlowConversation, live: FlowConversation): { conversation: FlowConversation; arrived: LateResult[] } {
  const arrived = live.late.filter((r) => !saved.late.includes(r));
  const conversation = saveFlowConversation(saved);
  conversation.late.push(...arrived);
  return { conversation, arrived };
}
