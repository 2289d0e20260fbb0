/**
 * Wire shapes the response engines accept (mirroring the JSON schemas in src/domain/), and the
 * engine contract the pipeline drives.
 */

export type VariableType = 'text' | 'digits' | 'number' | 'email' | 'name' | 'yes_no';

export interface ExtractVariable {
  name: string;
  type: VariableType;
  description?: string;
}

export type EquationOperator = '==' | '!=' | '>' | '>=' | '<' | '<=' | 'contains' | 'not_contains' | 'exists' | 'not_exists';

export interface Equation {
  left: string;
  operator: EquationOperator;
  right?: string;
}

export type TransitionCondition =
  | { type: 'prompt'; prompt: string }
  | { type: 'keyword'; keywords: string[] }
  | { type: 'equation'; equations: Equation[]; operator: '&&' | '||' }
  | { type: 'always' };

export interface FlowEdge {
  id: string;
  destination_node_id: string;
  transition_condition: TransitionCondition;
}

export interface FlowNode {
  id: string;
  name?: string;
  type: 'conversation' | 'end' | 'create_lead' | 'create_ticket';
  instruction?: { type: 'static_text' | 'prompt'; text: string };
  edges?: FlowEdge[];
  extract_variables?: ExtractVariable[];
  /** Templates; defaults name '{{name}}', phone '{{phone}}'. */
  lead?: { name?: string; phone?: string; email?: string; notes?: string };
  ticket?: { subject?: string; description?: string; priority?: string };
}

export interface ConversationFlow {
  start_node_id: string;
  nodes: FlowNode[];
  global_prompt?: string;
  default_dynamic_variables?: Record<string, string>;
  start_speaker?: 'agent' | 'user';
  model?: string;
  model_temperature?: number;
  begin_after_user_silence_ms?: number;
}

export interface ServiceLlmState {
  name: string;
  state_prompt?: string;
  edges?: Array<{ destination_state_name: string; description?: string }>;
}

export interface ServiceLlm {
  general_prompt?: string;
  begin_message?: string;
  model?: string;
  model_temperature?: number;
  states?: ServiceLlmState[];
  starting_state?: string;
  default_dynamic_variables?: Record<string, string>;
  start_speaker?: 'agent' | 'user';
}

/** Fields a create_lead node hands to the tools interface (templates already rendered). */
export interface LeadFields {
  name: string;
  phone: string;
  email?: string;
  notes?: string;
}

export interface TicketFields {
  subject: string;
  description: string;
  priority?: string;
}

/** Implemented by the webhooks/services side; the engine only calls it. */
export interface FlowTools {
  createLead(fields: LeadFields): Promise<unknown>;
  createTicket(fields: TicketFields): Promise<unknown>;
}

/** Call-level variables, read at the start of every agent turn so mid-call updates apply next turn. */
export interface CallVariables {
  /** service_llm_dynamic_variables given at call creation. */
  dynamic?: Record<string, string> | null;
  /** override_dynamic_variables (update-call); null removes. */
  overrides?: Record<string, string> | null;
}

/** What an engine produces for the agent to say or do. */
export type EngineOutput =
  | { type: 'text'; text: string }
  | { type: 'hangup'; reason: 'agent_hangup' };

/** The contract between the pipeline and a response engine (flow, service LLM, or a test fake). */
export interface ResponseEngine {
  /**
   * The agent's opening (start_speaker 'agent', or after begin_after_user_silence_ms). May
   * produce nothing.
   */
  begin(signal: AbortSignal): AsyncIterable<EngineOutput>;
  /** The agent's reply to one user turn (final transcript text). Streams text as it is produced. */
  respond(userText: string, signal: AbortSignal): AsyncIterable<EngineOutput>;
  /** Records what the user actually heard of the last reply (truncated when cut off). */
  agentSpoke(text: string, cutOff: boolean): void;
  /** Outcome for post-call analysis and PII redaction. */
  outcome(): EngineOutcome;
}

export interface EngineOutcome {
  /** True when an end node was reached or the agent called end_call. */
  reachedEnd: boolean;
  /** Variables the engine resolved or extracted during the call. */
  variables: Record<string, string>;
  /** Values of variables extracted with type 'name' (for PII redaction). */
  names: string[];
  /** Where the conversation is: node id (flow) or state name (service LLM). */
  position?: string;
}

/** Raised when an engine cannot run because a needed provider is missing or failed. */
export class EngineError extends Error {
  readonly reason: 'error_llm' | 'error_config';
  constructor(reason: 'error_llm' | 'error_config', message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'EngineError';
    this.reason = reason;
  }
}
