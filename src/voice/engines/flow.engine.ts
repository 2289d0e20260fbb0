import type { LlmProvider } from '../../providers/llm.ts';
import type { SttExpectation } from '../../providers/stt.ts';
import { digitCount, extractVariable } from './extract.ts';
import { mergePhrases, namesFromVariables, nodeExpectation, nodePhrases } from './expected.ts';
import { renderTemplate, resolveVariables } from './variables.ts';
import { endingAt, failedNodeEnding } from './flow.ending.ts';
import { speakPromptStep } from './flow.prompt.ts';
import { runToolNode } from './flow.tools.ts';
import { CANNOT_PRESS, CANNOT_TRANSFER, NO_PHONE, phoneInvocation, pressDigits, type FlowPhone } from './flow.phone.ts';
import { applyResponseVariables, callFunction, confirmedTurn, typedArgs } from './functions.ts';
import { abortable } from '../../lib/abortable.ts';
import { NODE_TRANSITIONS_PER_CALL } from '../record-bounds.ts';
import { askPromptEdges, chooseEdge } from './transitions.ts';
import { NO_TURN_CONTEXT, turnReference, type ReferenceLookup, type TurnContextSource } from './context.ts';
import { KNOWLEDGE_ANSWER_VARIABLE, KNOWLEDGE_FOUND, KNOWLEDGE_NOT_FOUND, KNOWLEDGE_RESULT_VARIABLE, answerFromKnowledge } from './knowledge.node.ts';
import { newFlowConversation, rollBackFlowConversation, saveFlowConversation, type FlowConversation, type PendingFunction } from './flow.conversation.ts';
import {
  EngineError,
  type FunctionCaller,
  type FunctionOutcome,
  type ToolCallRecord,
  type CallVariables,
  type ConversationFlow,
  type EngineOutcome,
  type EngineOutput,
  type FlowEdge,
  type FlowNode,
  type FlowTools,
  type ResponseEngine,
  type RespondOptions,
} from './types.ts';

export { equationsHold, keywordMatch } from './transitions.ts';
export { flowNeedsLlm } from './flow.requirements.ts';

/** Node hops allowed within one agent turn (tool nodes chain without waiting); guards loops. */
const MAX_HOPS_PER_TURN = 16;

export interface FlowEngineOptions {
  flow: ConversationFlow;
  /** Needed only for prompt instructions and prompt transitions (see flowNeedsLlm). */
  llm?: LlmProvider;
  /** Lead / ticket creation for create_lead and create_ticket nodes. */
  tools?: FlowTools;
  /** Call-level variables, read on every turn (so update-call overrides apply from the next turn). */
  variables?: () => CallVariables;
  /** current_node_id of create-web-call; default flow.start_node_id. */
  startNodeId?: string;
  /** Reports tool failures (the flow continues); optional. */
  onToolError?: (nodeId: string, error: unknown) => void;
  /** Reports an edge whose condition could not be judged (it counts as not holding: the else path); optional. */
  onEdgeError?: (nodeId: string, edgeId: string, error: unknown) => void;
  /** Calls the flow's custom functions (`function` nodes); without it, they fail as unavailable. */
  functions?: FunctionCaller;
  /** The agent's BCP-47 language: prompt instructions tell the model to reply in it. */
  language?: string;
  /** Reference material for the turns that ask the LLM (context.ts); default NO_TURN_CONTEXT, none. */
  contextSource?: TurnContextSource;
  /** Monotonic milliseconds, for the timings reported (RespondOptions.onTiming); default performance.now(). */
  now?: () => number;
  /** What the call can do on a phone line, for transfer_call and press_digit nodes; default NO_PHONE (a web call). */
  phone?: FlowPhone;
}

/** Variables a `function` node sets for the edges after it (docs/custom-functions.md). */
export const FUNCTION_STATUS_VARIABLE = 'tool_call_status';
export const FUNCTION_ERROR_VARIABLE = 'tool_call_error';

/**
 * Conversation-flow engine. Entering a node speaks its instruction (static text, or LLM output for
 * prompt instructions); tool nodes run their tool and move on at once; conversation nodes wait
 * for the user, extract variables, then take the first matching edge in order (keyword,
 * equation, prompt), with `always` as the else edge; with no match the node re-speaks (static)
 * or lets the LLM answer (prompt). End nodes speak, then hang up.
 */
export class FlowEngine implements ResponseEngine {
  readonly #flow: ConversationFlow;
  readonly #nodes: Map<string, FlowNode>;
  readonly #llm: LlmProvider | undefined;
  readonly #tools: FlowTools | undefined;
  readonly #callVariables: () => CallVariables;
  readonly #onToolError: ((nodeId: string, error: unknown) => void) | undefined;
  readonly #onEdgeError: ((nodeId: string, edgeId: string, error: unknown) => void) | undefined;
  readonly #language: string | undefined;
  readonly #functions: FunctionCaller | undefined;
  /** Everything a turn changes: a checkpoint copies it whole (flow.conversation.ts). */
  #conversation: FlowConversation;
  /** The turn being answered is confirmed once this resolves (a preemptive reply); undefined: it is. */
  #confirmed: Promise<void> | undefined;
  readonly #contextSource: TurnContextSource;
  readonly #now: () => number;
  /** The reference material of the turn being answered, asked for on its first LLM request. */
  #reference: ReferenceLookup;
  /** The caller's words a `knowledge` node has yet to answer this turn ('' once answered, and on the agent's turns). */
  #question = '';
  #onTiming: RespondOptions['onTiming'];
  readonly #phone: FlowPhone;

  constructor(options: FlowEngineOptions) {
    this.#flow = options.flow;
    this.#nodes = new Map(options.flow.nodes.map((n) => [n.id, n]));
    this.#llm = options.llm;
    this.#tools = options.tools;
    this.#callVariables = options.variables ?? (() => ({}));
    this.#onToolError = options.onToolError;
    this.#onEdgeError = options.onEdgeError;
    this.#functions = options.functions;
    this.#language = options.language;
    this.#contextSource = options.contextSource ?? NO_TURN_CONTEXT;
    this.#now = options.now ?? (() => performance.now());
    this.#phone = options.phone ?? NO_PHONE;
    this.#reference = turnReference(this.#contextSource, '', { now: this.#now });
    const startId = options.startNodeId ?? options.flow.start_node_id;
    const start = this.#nodes.get(startId);
    if (!start) throw new EngineError('error_config', `flow has no node ${startId}`);
    this.#conversation = newFlowConversation(start);
  }

  /** Id of the node the conversation is at. */
  get currentNodeId(): string {
    return this.#conversation.current.id;
  }

  /** The nodes entered so far, in order, the start node first (bounded: NODE_TRANSITIONS_PER_CALL + 1). */
  get path(): readonly string[] {
    return this.#conversation.path;
  }

  /** The current node's keywords and extracted-value words, and names among the call's variables. */
  expectedPhrases(): string[] {
    return mergePhrases(nodePhrases(this.#conversation.current), namesFromVariables(this.variables()));
  }

  /** What the current node expects, for directed recognition (nodeExpectation). */
  expectation(): SttExpectation {
    return nodeExpectation(this.#conversation.current);
  }

  /** All variables as the next turn will see them. */
  variables(): Record<string, string> {
    return resolveVariables(this.#flow.default_dynamic_variables, this.#callVariables(), this.#conversation.extracted);
  }

  outcome(): EngineOutcome {
    return {
      reachedEnd: this.#conversation.reachedEnd,
      ...(this.#conversation.ending ? { ending: this.#conversation.ending } : {}),
      variables: { ...this.#conversation.extracted },
      names: [...this.#conversation.names],
      position: this.#conversation.current.id,
    };
  }

  async *begin(signal: AbortSignal): AsyncIterable<EngineOutput> {
    this.#confirmed = undefined;
    this.#reference = turnReference(this.#contextSource, '', { now: this.#now });
    this.#question = '';
    yield* this.#drainLate();
    yield* this.#enter(this.#conversation.current, signal, 0);
  }

  async *respond(userText: string, signal: AbortSignal, options: RespondOptions = {}): AsyncIterable<EngineOutput> {
    this.#confirmed = options.confirmed;
    this.#reference = turnReference(this.#contextSource, userText, { now: this.#now, onTiming: options.onTiming });
    this.#question = userText;
    this.#onTiming = options.onTiming;
    this.#conversation.history.push({ role: 'user', content: userText });
    yield* this.#drainLate();
    const pending = this.#conversation.pending;
    if (pending) {
      // The user spoke over the filler of a function node: its request went on; the flow moves on
      // from that node once the result is in, and the words spoken over the filler are not routed.
      yield* this.#settle(pending, signal);
      yield* this.#leave(pending.node, signal, 0);
      return;
    }
    const node = this.#conversation.current;
    if (node.type === 'end' || this.#conversation.reachedEnd) return;
    if (node.type === 'function' && !this.#conversation.functionSent) {
      // Cut off before its request went out (during the filler): the node runs now.
      yield* this.#enter(node, signal, 0);
      return;
    }
    for (const v of node.extract_variables ?? []) {
      const value = extractVariable(v.type, userText, digitCount(v));
      if (value === undefined) continue;
      this.#conversation.extracted[v.name] = value;
      if (v.type === 'name') this.#conversation.names.add(value);
    }
    if (node.type === 'knowledge') {
      yield* this.#answer(node, signal, 0);
      return;
    }
    const next = await this.#chooseEdge(node, userText, signal);
    if (next) {
      yield* this.#enter(next, signal, 0);
      return;
    }
    // No transition: a prompt node lets the LLM answer within the node; a static node re-speaks;
    // a function node (no edge held after its call) has nothing to say again.
    if (node.type !== 'function') yield* this.#speakInstruction(node, signal);
  }

  agentSpoke(text: string, cutOff: boolean): void {
    if (!text) return;
    this.#conversation.history.push({ role: 'assistant', content: cutOff ? `${text} [interrupted]` : text });
  }

  /**
   * Saves a copy of the whole conversation; the function returned puts it back whole, with the
   * results of functions not waited for that came in meanwhile still stored (they happened).
   */
  checkpoint(): () => void {
    const saved = saveFlowConversation(this.#conversation);
    return () => {
      const { conversation, arrived } = rollBackFlowConversation(saved, this.#conversation);
      this.#conversation = conversation;
      for (const r of arrived) this.#apply(r.pending, r.outcome, false, { report: false });
      this.#confirmed = undefined;
    };
  }

  async *#enter(node: FlowNode, signal: AbortSignal, hops: number): AsyncIterable<EngineOutput> {
    if (hops > MAX_HOPS_PER_TURN) throw new EngineError('error_config', 'flow loops between nodes without waiting for the user');
    this.#conversation.current = node;
    if (this.#conversation.path.length <= NODE_TRANSITIONS_PER_CALL) this.#conversation.path.push(node.id);
    // The ending is decided on entering the end node: a caller hanging up during its goodbye does not undo it.
    if (node.type === 'end') this.#conversation.ending ??= endingAt(node, this.#conversation.elseFrom);
    this.#conversation.functionSent = false;
    if (node.type === 'function') {
      yield* this.#runFunction(node, signal);
      yield* this.#leave(node, signal, hops);
      return;
    }
    if (node.type === 'transfer_call' || node.type === 'press_digit') {
      yield* this.#phoneNode(node, signal, hops);
      return;
    }
    // Entered on the caller's words (from a node before it), a knowledge node answers them at once.
    if (node.type === 'knowledge' && this.#question.trim() !== '') {
      yield* this.#answer(node, signal, hops);
      return;
    }
    yield* this.#speakInstruction(node, signal);
    if (node.type === 'end') {
      this.#conversation.reachedEnd = true;
      yield { type: 'hangup', reason: 'agent_hangup' };
      return;
    }
    if (node.type === 'create_lead' || node.type === 'create_ticket') {
      await confirmedTurn(this.#confirmed, signal);
      await runToolNode(node, { tools: this.#tools, vars: this.variables(), history: this.#conversation.history, onToolError: this.#onToolError });
      signal.throwIfAborted();
      const next = await this.#chooseEdge(node, '', signal);
      if (next) yield* this.#enter(next, signal, hops + 1);
    }
  }

  async *#speakInstruction(node: FlowNode, signal: AbortSignal): AsyncIterable<EngineOutput> {
    const ins = node.instruction;
    if (!ins || !ins.text.trim()) return;
    const vars = this.variables();
    if (ins.type === 'static_text') {
      const text = renderTemplate(ins.text, vars).trim();
      if (text) yield { type: 'text', text };
      return;
    }
    const llm = this.#requireLlm(`node ${node.id} has a prompt instruction`);
    const reference = await this.#reference(this.#conversation.history, signal);
    const step = { instruction: ins.text, vars, history: [...reference, ...this.#conversation.history], ...(this.#language ? { language: this.#language } : {}) };
    yield* speakPromptStep(llm, this.#flow, step, signal);
  }

  /**
   * A knowledge node answers this turn's words (knowledge.node.ts) and sets KNOWLEDGE_RESULT_VARIABLE
   * for its edges; with no edge holding it waits for the next question (not found: asking again).
   */
  async *#answer(node: FlowNode, signal: AbortSignal, hops: number): AsyncIterable<EngineOutput> {
    const question = this.#question;
    this.#question = '';
    const timing = { now: this.#now, onTiming: this.#onTiming };
    const answer = await answerFromKnowledge(this.#contextSource, node, { question, history: this.#conversation.history }, timing, signal);
    this.#conversation.extracted[KNOWLEDGE_RESULT_VARIABLE] = answer ? KNOWLEDGE_FOUND : KNOWLEDGE_NOT_FOUND;
    this.#conversation.extracted[KNOWLEDGE_ANSWER_VARIABLE] = answer?.text ?? '';
    if (answer) yield { type: 'text', text: answer.text };
    const next = await this.#chooseEdge(node, question, signal);
    if (next) yield* this.#enter(next, signal, hops + 1);
    else if (!answer) yield* this.#speakInstruction(node, signal);
  }

  /**
   * A transfer_call node speaks its instruction, then asks for the transfer (the call's owner
   * makes it once the words have played: `transferFailed` brings a refusal back); a press_digit
   * node sends its keys and moves on. Where the call cannot, the failure is recorded and `#fail` follows.
   */
  async *#phoneNode(node: FlowNode, signal: AbortSignal, hops: number): AsyncIterable<EngineOutput> {
    if (node.type === 'transfer_call') yield* this.#speakInstruction(node, signal);
    await confirmedTurn(this.#confirmed, signal);
    const toolCallId = `tool_call_${++this.#conversation.toolCallSeq}`;
    yield phoneInvocation(node, toolCallId);
    if (node.type === 'transfer_call') {
      const destination = node.transfer_destination?.number;
      if (!this.#phone.canTransfer || destination === undefined) return yield* this.#fail(node, toolCallId, CANNOT_TRANSFER, signal, hops);
      this.#conversation.transfer = { nodeId: node.id, toolCallId };
      this.#conversation.reachedEnd = true;
      yield { type: 'hangup', reason: 'call_transfer', destination };
      return;
    }
    const keypad = this.#phone.keypad;
    if (!keypad) return yield* this.#fail(node, toolCallId, CANNOT_PRESS, signal, hops);
    try {
      await pressDigits(keypad, node.digits ?? '', signal);
    } catch (error) {
      if (signal.aborted) throw error;
      return yield* this.#fail(node, toolCallId, `error: the keys could not be sent (${(error as Error).message})`, signal, hops);
    }
    yield { type: 'tool_call_result', tool_call_id: toolCallId, content: `pressed ${node.digits ?? ''}` };
    yield* this.#leave(node, signal, hops);
  }

  /** A phone node failed: the failure is recorded, then its failure edge is taken, or the call ends. */
  async *#fail(node: FlowNode, toolCallId: string, content: string, signal: AbortSignal, hops: number): AsyncIterable<EngineOutput> {
    yield { type: 'tool_call_result', tool_call_id: toolCallId, content };
    if (node.edge) return yield* this.#enter(this.#destination(node.edge), signal, hops + 1);
    this.#conversation.ending ??= failedNodeEnding(node, content.replace(/^error: /, ''));
    this.#conversation.reachedEnd = true;
    yield { type: 'hangup', reason: 'agent_hangup' };
  }

  /**
   * The carrier refused the transfer a transfer_call node asked for: the flow goes on from the
   * node's failure edge (or ends), in `unprompted`. False when no transfer of this flow is pending.
   */
  transferFailed(_destination: string, why: string): boolean {
    const transfer = this.#conversation.transfer;
    if (!transfer || transfer.failure !== undefined) return false;
    transfer.failure = why;
    return true;
  }

  /** What the flow says after a refused transfer (transferFailed): the record, then the failure edge's node. */
  async *unprompted(signal: AbortSignal): AsyncIterable<EngineOutput> {
    const transfer = this.#conversation.transfer;
    const node = transfer ? this.#nodes.get(transfer.nodeId) : undefined;
    if (!transfer || transfer.failure === undefined || !node) return;
    this.#conversation.transfer = undefined;
    this.#conversation.reachedEnd = false;
    yield* this.#fail(node, transfer.toolCallId, `error: the transfer failed (${transfer.failure})`, signal, 0);
  }

  /** Takes the first edge that holds after a function node (no user words), if any. */
  async *#leave(node: FlowNode, signal: AbortSignal, hops: number): AsyncIterable<EngineOutput> {
    const next = await this.#chooseEdge(node, '', signal);
    if (next) yield* this.#enter(next, signal, hops + 1);
  }

  /**
   * A `function` node: the side effect of the flow's custom functions, run once per entry. Speaks
   * the node's instruction as a filler first (speak_during_execution), records the invocation,
   * sends the request, and unless `wait_for_result` is false waits for the answer (a barge-in
   * stops the wait, not the request: see `respond`) and stores its variables.
   */
  async *#runFunction(node: FlowNode, signal: AbortSignal): AsyncIterable<EngineOutput> {
    const tool = this.#flow.tools?.find((t) => t.tool_id === node.tool_id);
    if (!tool) throw new EngineError('error_config', `function node ${node.id} names unknown tool ${node.tool_id ?? ''}`);
    if (node.speak_during_execution ?? tool.speak_during_execution ?? false) {
      if (node.instruction?.text.trim()) yield* this.#speakInstruction(node, signal);
      else if (tool.execution_message_description?.trim()) yield { type: 'text', text: renderTemplate(tool.execution_message_description, this.variables()).trim() };
    }
    const vars = this.variables();
    const args = typedArgs(tool.parameters, Object.fromEntries(Object.entries(node.args ?? {}).map(([k, t]) => [k, renderTemplate(t, vars)])));
    await confirmedTurn(this.#confirmed, signal);
    const toolCallId = `tool_call_${++this.#conversation.toolCallSeq}`;
    yield { type: 'tool_call_invocation', tool_call_id: toolCallId, name: tool.name, arguments: JSON.stringify(args) };
    this.#conversation.functionSent = true;
    const outcome = callFunction(this.#functions, tool, args);
    const pending: PendingFunction = { node, toolCallId, outcome };
    if (node.wait_for_result === false) {
      // Nobody waits for this promise: whatever storing the result throws is reported, never left unhandled.
      void outcome
        .then((o) => this.#conversation.late.push({ pending, outcome: o, record: this.#apply(pending, o, false) }))
        .catch((error: unknown) => this.#onToolError?.(node.id, error));
      return;
    }
    this.#conversation.pending = pending;
    yield* this.#settle(pending, signal);
  }

  /** Waits (abortably) for a function's outcome, stores its variables and records its result. */
  async *#settle(pending: PendingFunction, signal: AbortSignal): AsyncIterable<EngineOutput> {
    const outcome = await abortable(pending.outcome, signal);
    this.#conversation.pending = undefined;
    yield this.#apply(pending, outcome, true);
  }

  /** Stores a function's response variables and status; returns its result record. */
  #apply(pending: PendingFunction, outcome: FunctionOutcome, waited: boolean, options = { report: true }): ToolCallRecord {
    const tool = this.#flow.tools?.find((t) => t.tool_id === pending.node.tool_id);
    const failure = applyResponseVariables(tool?.response_variables, outcome, this.#conversation.extracted);
    this.#conversation.extracted[FUNCTION_STATUS_VARIABLE] = failure === null ? 'success' : 'error';
    this.#conversation.extracted[FUNCTION_ERROR_VARIABLE] = failure ?? '';
    if (failure !== null && options.report) this.#onToolError?.(pending.node.id, Object.assign(new Error('custom function failed'), { code: failure }));
    return { type: 'tool_call_result', tool_call_id: pending.toolCallId, content: outcome.content, ...(waited ? { delayMs: outcome.durationMs } : {}) };
  }

  *#drainLate(): Iterable<EngineOutput> {
    const late = this.#conversation.late;
    this.#conversation.late = [];
    for (const r of late) yield r.record;
  }

  async #chooseEdge(node: FlowNode, userText: string, signal: AbortSignal): Promise<FlowNode | undefined> {
    // Tool nodes chain on with `always`: only a conversation node's else edge is a fallback.
    if (node.type === 'conversation') this.#conversation.elseFrom = undefined;
    const choice = await chooseEdge(node, userText, {
      vars: this.variables(),
      askPrompt: (promptEdges) => this.#askPromptEdges(node, promptEdges, signal),
      onEdgeError: (edgeId, error) => this.#onEdgeError?.(node.id, edgeId, error),
    });
    if (!choice) return undefined;
    if (choice.viaElse) this.#conversation.elseFrom = node.id;
    return this.#destination(choice.edge);
  }

  #destination(edge: FlowEdge): FlowNode {
    const n = this.#nodes.get(edge.destination_node_id);
    if (!n) throw new EngineError('error_config', `edge ${edge.id} points to missing node ${edge.destination_node_id}`);
    return n;
  }

  /** One LLM call judges every prompt edge of the node (transitions.ts). */
  async #askPromptEdges(node: FlowNode, promptEdges: readonly FlowEdge[], signal: AbortSignal): Promise<FlowEdge | null> {
    const llm = this.#requireLlm(`node ${node.id} has prompt transitions`);
    const vars = this.variables();
    const reference = await this.#reference(this.#conversation.history, signal);
    return askPromptEdges(llm, { promptEdges, vars, history: this.#conversation.history, reference, ...(this.#flow.model ? { model: this.#flow.model } : {}), signal });
  }

  #requireLlm(why: string): LlmProvider {
    if (!this.#llm) throw new EngineError('error_llm', `no LLM is configured but ${why}`);
    return this.#llm;
  }
}
