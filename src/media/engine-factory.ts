
import { type AgentConfig, type AgentOverride, type EngineSnapshot, engineWithOverride, settingsWithOverride } from '../domain/agent.ts';
import type { LlmProvider } from '../providers/llm.ts';
import type { Scheduler } from '../lib/scheduler.ts';
import {
  CustomLlmEngine,
  FlowEngine,
  LlmEngine,
  flowNeedsLlm,
  type CallVariables,
  type FlowTools,
  type FunctionCaller,
  type LlmSocketOpener,
  type LlmWebsocketReason,
  type ResponseEngine,
  type TurnContextSource,
} from '../voice/index.ts';

/** The agent version a call runs, as the call service resolves it. */
export interface AgentForCall {
  config: AgentConfig;
  engine: EngineSnapshot;
}

/** The engine definition of a call: the agent version's, with the call's `agent_override` applied. */
export function effectiveEngine(agent: AgentForCall, override: AgentOverride | null | undefined): EngineSnapshot {
  return engineWithOverride(agent.engine, override);
}

/** The agent settings of a call: the version's, with `agent_override.agent` applied. */
export function effectiveSettings(agent: AgentForCall, override: AgentOverride | null | undefined): AgentConfig {
  return settingsWithOverride(agent.config, override);
}

/**
 * Why this server cannot run an engine, or null when it can: a flow with a prompt node or prompt
 * transition, or any service-LLM agent, needs an LLM. create-web-call answers 400 with this text.
 */
export function engineNeedsMissingLlm(engine: EngineSnapshot, hasLlm: boolean): string | null {
  if (hasLlm || engine.type === 'custom_llm') return null;
  if (engine.type === 'service_llm') {
    return 'This server has no LLM configured (set LLM_BASE_URL), and service-LLM agents need one.';
  }
  const where = flowNeedsLlm(engine.definition);
  return where ? `This server has no LLM configured (set LLM_BASE_URL), and the agent's conversation flow needs one: ${where}.` : null;
}

export interface BuildEngineOptions {
  engine: EngineSnapshot;
  llm: LlmProvider | undefined;
  tools?: FlowTools;
  /** Custom functions (flow `function` nodes, service-LLM tools). */
  functions?: FunctionCaller;
  variables: () => CallVariables;
  currentNodeId?: string | null;
  currentState?: string | null;
  onToolError?: (nodeId: string, error: unknown) => void;
  /** A flow edge whose condition could not be judged (it took the else path). */
  onEdgeError?: (nodeId: string, edgeId: string, error: unknown) => void;
  /** The call's language (the agent's `language`): LLM prompts ask for replies in it. */
  language?: string;
  /** What a custom LLM needs (required for a `custom_llm` engine). */
  customLlm?: CustomLlmDeps;
  /** Reference material for each turn (issue 29: the engine's knowledge bases, media/knowledge-context.ts). */
  contextSource?: TurnContextSource;
  /** The call's endpoint can transfer it (a phone call): a service LLM offers its `transfer_call` tools, a flow's transfer_call nodes transfer. */
  canTransfer?: boolean;
  /** Presses keys on the call (a phone call's endpoint can): a service LLM offers its `press_digit` tools, a flow's press_digit nodes send theirs. */
  keypad?: (digits: string) => Promise<void>;
}

/** A custom LLM's connection to the user's server, as the call session gives it. */
export interface CustomLlmDeps {
  callId: string;
  open: LlmSocketOpener;
  callDetails: () => unknown;
  onFailure: (reason: LlmWebsocketReason, detail: string) => void;
  /** The engine has speech of its own (agent_interrupt): have the pipeline speak it. */
  onUnprompted: () => void;
  /** The server's `metadata` event, for the web client. */
  onMetadata: (metadata: unknown) => void;
  scheduler: Scheduler;
}

export interface BuiltEngine {
  engine: ResponseEngine;
  startSpeaker: 'agent' | 'user';
  beginAfterUserSilenceMs: number | undefined;
  /** Where the conversation is now (node id or state name), for node_transition events. */
  position(): string | undefined;
  /** A conversation flow's nodes entered so far, in order (FlowEngine.path); absent for other engines. */
  path?(): readonly string[];
  /** Releases what the engine holds (a custom LLM's socket) when the call ends. */
  close?(): void;
  /** Asks for a reminder after the user's silence (custom LLM: reminder_required); absent for engines without reminders. */
  remind?(): void;
}

/** Builds the response engine of a call (throws EngineError for a definition it cannot run). */
export function buildEngine(o: BuildEngineOptions): BuiltEngine {
  const e = o.engine;
  if (e.type === 'conversation_flow') {
    const flow = e.definition;
    const engine = new FlowEngine({
      flow,
      ...(o.llm ? { llm: o.llm } : {}),
      ...(o.tools ? { tools: o.tools } : {}),
      ...(o.functions ? { functions: o.functions } : {}),
      variables: o.variables,
      ...(o.currentNodeId ? { startNodeId: o.currentNodeId } : {}),
      ...(o.onToolError ? { onToolError: o.onToolError } : {}),
      ...(o.onEdgeError ? { onEdgeError: o.onEdgeError } : {}),
      ...(o.language ? { language: o.language } : {}),
      ...(o.contextSource ? { contextSource: o.contextSource } : {}),
      // What the call can do for the flow's transfer_call and press_digit nodes (issue 24).
      phone: { canTransfer: o.canTransfer === true, ...(o.keypad ? { keypad: o.keypad } : {}) },
    });
    return {
      engine,
      startSpeaker: flow.start_speaker ?? 'agent',
      beginAfterUserSilenceMs: flow.begin_after_user_silence_ms,
      position: () => engine.currentNodeId,
      path: () => engine.path,
    };
  }
  if (e.type === 'custom_llm') {
    if (!o.customLlm) throw new Error('custom-LLM engine without a socket opener');
    const engine = new CustomLlmEngine({ url: e.llm_websocket_url, ...o.customLlm, ...(o.contextSource ? { contextSource: o.contextSource } : {}), canTransfer: o.canTransfer === true });
    // The agent begins: the engine dials the server and speaks its begin message, if any (empty: the user speaks first).
    return { engine, startSpeaker: 'agent', beginAfterUserSilenceMs: undefined, position: () => undefined, close: () => engine.close(), remind: () => engine.remind() };
  }
  const config = e.definition;
  if (!o.llm) throw new Error('service-LLM engine without an LLM');
  const engine = new LlmEngine({
    config,
    llm: o.llm,
    variables: o.variables,
    ...(o.functions ? { functions: o.functions } : {}),
    ...(o.currentState ? { startState: o.currentState } : {}),
    ...(o.language ? { language: o.language } : {}),
    ...(o.contextSource ? { contextSource: o.contextSource } : {}),
    ...(o.canTransfer ? { canTransfer: true } : {}),
    ...(o.keypad ? { keypad: o.keypad } : {}),
  });
  return {
    engine,
    startSpeaker: config.start_speaker ?? 'agent',
    beginAfterUserSilenceMs: config.begin_after_user_silence_ms,
    position: () => engine.currentState,
  };
}

