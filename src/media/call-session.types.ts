import type { Counter } from 'prom-client';
import type { Logger } from '../lib/logger.ts';
import type { Scheduler } from '../lib/scheduler.ts';
import type { Call } from '../domain/call.ts';
import type { CallCheckpoint } from '../domain/call-checkpoint.ts';
import type { CallOutcome } from '../services/call-lifecycle.ts';
import type { Providers } from '../providers/registry.ts';
import type { RecordingStore } from '../services/recording-store.ts';
import { DEFAULT_RECOGNITION_TIMEOUT_MS, type FlowTools, type FunctionCaller, type LlmSocketOpener } from '../voice/index.ts';
import type { KnowledgeRetriever } from './knowledge-context.ts';

/** The call lifecycle's operations a session uses (services never import media: media depends on them). */
export interface SessionCallService {
  readCall(callId: string): Promise<Call | undefined>;
  finishCall(callId: string, outcome: CallOutcome): Promise<boolean>;
  /** Saves the call's checkpoint beside its lease (what a server taking over a lost call ends it with). */
  checkpointCall(callId: string, checkpoint: CallCheckpoint): Promise<boolean>;
}

/** Timings of a session; defaults in DEFAULT_SESSION_TIMINGS. */
export interface SessionTimings {
  /** No audio from the caller for this long ends the call `client_disconnected`, ms; default 5 000. */
  audioTimeoutMs: number;
  /** Longest wait for a turn's transcript once the turn has ended, ms; default 5 000 (STT_TIMEOUT_MS). */
  recognitionTimeoutMs: number;
  /** Longest wait for the post-call analysis (LLM), ms; default 10 000. */
  analysisTimeoutMs: number;
}

export const DEFAULT_SESSION_TIMINGS: SessionTimings = {
  audioTimeoutMs: 5_000,
  recognitionTimeoutMs: DEFAULT_RECOGNITION_TIMEOUT_MS,
  analysisTimeoutMs: 10_000,
};

/**
 * At a deadline (shutdown), the post-call analysis is cut off this long before it, in ms, so that
 * the results can still be stored: 1 000, or half the time left when that is less.
 */
export const STORE_RESERVE_MS = 1_000;

/** How a call ends: see `CallSession.end`. */
export interface EndOptions {
  /**
   * When the call's results must be stored by, on the session scheduler's clock (ms; shutdown sets
   * it). The LLM's post-call analysis is cut off STORE_RESERVE_MS before it (or halfway, when less
   * time is left) and the embedded analysis, which is instant, is stored instead. Applies as well
   * to a call that was already ending; the earliest deadline given wins. Default: none.
   */
  deadline?: number;
  /**
   * The carrier took the call on in a transfer (reason `call_transfer`): where it went, stored as
   * the call's `transfer_destination`.
   */
  transferredTo?: string;
}

export interface SessionDeps {
  calls: SessionCallService;
  providers: Providers;
  /** Lead and ticket creation for a flow's tool nodes. */
  tools?: (call: { accountId: string; callId: string }) => FlowTools;
  /**
   * Custom functions of the call's agent (signed requests through the webhook destination policy);
   * `signal` aborts the requests still running when the call ends.
   */
  functions?: (call: { accountId: string; callId: string }, signal: AbortSignal) => FunctionCaller;
  /**
   * A custom LLM's connection (`custom_llm` agents): opens sockets under the webhook destination
   * policy, and makes the call object sent as `call_details`.
   */
  customLlm?: { open: LlmSocketOpener; callDetails: (call: Call) => unknown; failures?: Counter<'reason'> };
  /** Issue 29: the knowledge bases an engine retrieves from before each response (media/knowledge-context.ts). */
  knowledge?: KnowledgeRetriever;
  /** Where the call's recording is written (files under DATA_DIR, or rows on PostgreSQL). */
  recordings: RecordingStore;
  /** Hands the names the flow captured to the PII redactor before the call is finished. */
  rememberNames?: (callId: string, names: readonly string[]) => void;
  /** The call's logger (a child carrying its call id); messages are static, fields never carry PII. */
  log: Logger;
  /** Counts calls ended by an error nothing expected, by the part that failed (switchboard_call_crashes_total). */
  crashes?: Counter<'where'>;
  timings: SessionTimings;
  /** Time: the session's and its pipeline's monotonic clock and timers; tests pass a ManualScheduler. */
  scheduler: Scheduler;
}
