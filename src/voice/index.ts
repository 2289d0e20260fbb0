// Public surface of the voice pipeline, for the media layer and the CLI.
export { bargeInThresholdMs } from './barge-in.ts';
export { VoicePipeline, DEFAULT_RECOGNITION_TIMEOUT_MS, type VoicePipelineOptions, type PipelineEvents, type HangupReason, type FailureReason } from './pipeline.ts';
export { DtmfCollector, DEFAULT_DTMF_OPTIONS, type DtmfOptions } from './dtmf.ts';
export { FlowEngine, flowNeedsLlm, type FlowEngineOptions } from './engines/flow.engine.ts';
export { LlmEngine, type LlmEngineOptions } from './engines/llm.engine.ts';
export { CustomLlmEngine, type CustomLlmEngineOptions, type LlmSocket, type LlmSocketEnd, type LlmSocketHandlers, type LlmSocketOpener, type LlmWebsocketReason } from './engines/custom-llm.engine.ts';
export type { ConversationFlow, ServiceLlm, FlowTools, LeadFields, TicketFields, CallVariables, ResponseEngine, EngineOutcome, EngineOutput, EngineEnding, FunctionCaller, FunctionOutcome } from './engines/types.ts';
export { EngineError } from './engines/types.ts';
export type { TurnContext, TurnContextSource, TurnQuery, ReferencePassage, ReferenceScope } from './engines/context.ts';
export { resolveVariables, renderTemplate } from './engines/variables.ts';
export { formatTranscript, toTranscriptObject, fromTranscriptObject, toTranscriptWithToolCalls, type Utterance, type TimedToolCall, type TimedNodeTransition, type TimedRetrieval } from './transcript.ts';
export { KNOWLEDGE_CHUNK_MAX_CHARS, KNOWLEDGE_RETRIEVALS_PER_CALL, NODE_TRANSITIONS_PER_CALL } from './record-bounds.ts';
export { summarizeLatency, latencyReport, type TurnLatency, type LatencySummary } from './latency.ts';
export { analyzeCall, embeddedAnalysis, embeddedSuccess, type AnalysisInput, type CallAnalysis } from './analysis.ts';
export { redactTranscript, redactText, type RedactionResult, type RedactedSpan } from './redact.ts';
export { withBeginDelay } from './begin-delay.ts';
export { overrideEngine } from './engine-override.ts';
export { DEFAULT_BACKCHANNEL_FREQUENCY } from './backchannel.ts';
