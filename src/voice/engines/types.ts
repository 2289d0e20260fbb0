/**
 * The engine contract the pipeline drives, and the definitions the engines run. Flow and
 * service-LLM definitions are the domain's own types (derived from its schemas in
 * src/domain/conversation-flow.ts and src/domain/service-llm.ts), under the names the engines use.
 */
import type {
  ConversationFlowDefinition,
  Equation,
  EquationOperator,
  ExtractVariable,
  FlowEdge,
  FlowNode,
  TransitionCondition,
  VariableType,
} from '../../domain/conversation-flow.ts';
import type { LlmState, ServiceLlmDefinition } from '../../domain/service-llm.ts';
import type { CustomFunction } from '../../domain/custom-function.ts';
import type { SttExpectation } from '../../providers/stt.ts';

export type { Equation, EquationOperator, ExtractVariable, FlowEdge, FlowNode, TransitionCondition, VariableType };
/** A conversation flow as an agent version pins it. */
export type ConversationFlow = ConversationFlowDefinition;
/** A service LLM as an agent version pins it. */
export type ServiceLlm = ServiceLlmDefinition;
export type ServiceLlmState = LlmState;

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

/** What came of one custom-function request (src/webhooks/function-caller.ts makes it). */
export interface FunctionOutcome {
  /** True on a 2xx answer. */
  ok: boolean;
  /**
   * What the model (and the record) sees: the answer's body, JSON or text, at most
   * FUNCTION_RESULT_MAX_CHARS characters (a longer one is cut and says so); on a failure, the error.
   */
  content: string;
  /** The answer parsed as JSON, when it was complete JSON; undefined otherwise. */
  json?: unknown;
  /** On a failure, a short machine-readable reason: `timeout`, `http_<status>`, `network`, `refused`. */
  error?: string;
  /** The round trip, ms. */
  durationMs: number;
}

/**
 * Calls a custom function (implemented outside voice/: the signed request through the webhook
 * destination policy). Never rejects: failures come back as outcomes. `signal` aborts the request
 * (the call ended).
 */
export interface FunctionCaller {
  call(fn: CustomFunction, args: Record<string, unknown>, signal?: AbortSignal): Promise<FunctionOutcome>;
}

/** Call-level variables, read at the start of every agent turn so mid-call updates apply next turn. */
export interface CallVariables {
  /** service_llm_dynamic_variables given at call creation. */
  dynamic?: Record<string, string> | null;
  /** override_dynamic_variables (update-call); null removes. */
  overrides?: Record<string, string> | null;
}

/** A function call as transcript_with_tool_calls records it: the invocation. */
export interface ToolCallInvocation {
  type: 'tool_call_invocation';
  tool_call_id: string;
  name: string;
  /** The arguments as JSON text. */
  arguments: string;
}

/** A function call's result, as transcript_with_tool_calls records it. */
export interface ToolCallResult {
  type: 'tool_call_result';
  tool_call_id: string;
  content: string;
  /** The round trip, ms, when it delayed the reply (the call's latency gains it). */
  delayMs?: number;
}

export type ToolCallRecord = ToolCallInvocation | ToolCallResult;

/**
 * What an engine produces for the agent to say or do. Text streams; any other output also makes
 * the text so far be spoken at once (a filler before a function call is heard while it runs).
 * How long the engine's own stages took is not an output: it goes to RespondOptions.onTiming.
 */
export type EngineOutput = { type: 'text'; text: string } | EngineHangup | ToolCallRecord;

/**
 * The engine ends the call once the reply has played: a hang-up, or a cold transfer of a phone
 * call to `destination` (an E.164 number or a SIP URI; issue 24), which only an engine told the
 * call can be transferred asks for; `voicemail_reached` once the message is left on an answering
 * machine (voice/voicemail-gate.ts).
 */
export type EngineHangup = { type: 'hangup'; reason: 'agent_hangup' | 'voicemail_reached' } | { type: 'hangup'; reason: 'call_transfer'; destination: string };

/** The contract between the pipeline and a response engine (flow, service LLM, or a test fake). */
export interface ResponseEngine {
  /**
   * The agent's opening (start_speaker 'agent', or after begin_after_user_silence_ms). May
   * produce nothing.
   */
  begin(signal: AbortSignal): AsyncIterable<EngineOutput>;
  /**
   * The agent's reply to one user turn (final transcript text). Streams text as it is produced.
   * With `options.confirmed` (a preemptive reply, see `checkpoint`), the turn may still be
   * withdrawn: the engine awaits it before any side effect.
   */
  respond(userText: string, signal: AbortSignal, options?: RespondOptions): AsyncIterable<EngineOutput>;
  /** Records what the user actually heard of the last reply (truncated when cut off). */
  agentSpoke(text: string, cutOff: boolean): void;
  /** Outcome for post-call analysis and PII redaction. */
  outcome(): EngineOutcome;
  /**
   * What the user is likely to say next, read by the pipeline before each user turn to bias
   * recognition (SttStream.bias): lower-case words and short phrases, e.g. the current node's
   * keywords, the words of the values it extracts, names among the call's variables
   * (src/voice/engines/expected.ts). Optional; [] or absent when the engine expects nothing.
   */
  expectedPhrases?(): string[];
  /**
   * What the user is expected to say next, for directed recognition (SttStream.expect): closed
   * when the engine acts only on a closed set of answers (a flow node's keyword edges, yes/no,
   * digits, a number), open otherwise (src/voice/engines/expected.ts, nodeExpectation). Read
   * beside expectedPhrases(); absent: open.
   */
  expectation?(): SttExpectation;
  /**
   * Speech the engine starts itself, not in answer to a turn (a custom LLM's `agent_interrupt` or
   * the answer to its reminder). The engine's owner calls VoicePipeline.speakUnprompted() when the
   * engine has something; the pipeline then runs this, after any reply in progress. Optional.
   */
  unprompted?(signal: AbortSignal): AsyncIterable<EngineOutput>;
  /**
   * The transfer the engine asked for (EngineHangup `call_transfer`) failed: the carrier refused,
   * or the call cannot be transferred. True when the engine goes on (its words come from
   * `unprompted`: a flow's failure edge); false or absent, the call ends `agent_hangup`.
   */
  transferFailed?(destination: string, why: string): boolean;
  /**
   * Whether the user may barge in on the reply playing now; absent: always. A custom LLM's
   * response sent with `no_interruption_allowed` plays to its end, and what the user said over it
   * is answered after it. Read by the pipeline when speech over the agent would interrupt it.
   */
  interruptible?(): boolean;
  /** The agent began speaking a reply (the owner relays the pipeline's agent_start_talking). Optional. */
  agentStarted?(): void;
  /** A live interim hypothesis of the user's utterance (the owner relays the pipeline's user_interim). Optional. */
  userSpeaking?(text: string): void;
  /**
   * Preemptive replies (optional): saves the conversation's state and returns what puts it back.
   * An engine that has it may be asked to reply to a turn the user has not finished yet
   * (`respond` with `options.confirmed`), and is rolled back when the user goes on. Such an engine
   * runs no side effect before `confirmed` resolves: no custom function's request, no lead, no
   * ticket; only its text and what it reads (an LLM's answer) may run ahead.
   */
  checkpoint?(): () => void;
}

export interface RespondOptions {
  /**
   * Resolves once the user's turn is confirmed (it never rejects: a withdrawn turn aborts the
   * reply's signal instead). Absent: the turn is confirmed already.
   */
  confirmed?: Promise<void>;
  /**
   * Receives each stage of the turn the engine timed (EngineTiming), once, as soon as the stage
   * is over: before the text it held back. Stages the turn does not run are not reported.
   */
  onTiming?: (timing: EngineTiming) => void;
  /**
   * The user's words with their times, ms on the call's timeline, where the recogniser gave them
   * (SttResult.words placed by the pipeline); absent otherwise, and for a reply prepared before the
   * turn ended (its text was an interim hypothesis).
   */
  words?: ReadonlyArray<{ word: string; startMs: number; endMs: number }>;
}

/**
 * A stage of a turn the engine timed, reported beside the turn's outputs (RespondOptions.onTiming)
 * as a latency figure of its own:
 * - `context`: finding the turn's reference material (a TurnContextSource, engines/context.ts),
 *   just before the turn's first LLM request, so it delays the LLM's first words (in a flow,
 *   static text spoken earlier in the turn is not delayed). Reported only by an engine given a
 *   source other than the default NO_TURN_CONTEXT, for turns that make an LLM request. The
 *   pipeline records it as the turn's `contextMs`.
 */
export interface EngineTiming {
  type: 'timing';
  stage: 'context';
  /** How long the stage took, ms (the engine's monotonic clock). */
  ms: number;
}

/**
 * How the engine ended the conversation: set once a flow enters an end node (before its goodbye
 * is spoken) or the service LLM calls end_call. The post-call analysis reads `successful`.
 */
export interface EngineEnding {
  via: 'end_node' | 'end_call';
  /** The end node (flow). */
  nodeId?: string;
  /** The goal of the call was achieved (rules in docs/voice-pipeline.md, Post-call analysis). */
  successful: boolean;
  /** Why, in words, for the analysis: 'end node "bye" reached through the else edge of "greet"'. */
  detail: string;
  /** The flow's author marked the end node (`success`): the mark stands over an LLM's opinion. */
  marked: boolean;
}

export interface EngineOutcome {
  /** True when an end node was reached or the agent called end_call. */
  reachedEnd: boolean;
  /** How the conversation ended, once the engine ended it. */
  ending?: EngineEnding;
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
