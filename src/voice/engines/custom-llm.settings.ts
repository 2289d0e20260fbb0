/**
 * The custom LLM's protocol settings and the socket the engine speaks it over (docs/custom-llm.md):
 * the reasons a custom LLM ends a call, the bounds, ping_pong and the reconnection policy.
 */
import type { Scheduler } from '../../lib/scheduler.ts';
import type { TurnContextSource } from './context.ts';

/** Why a custom LLM ends the call (the call's disconnection_reason). */
export type LlmWebsocketReason =
  | 'error_llm_websocket_open'
  | 'error_llm_websocket_lost_connection'
  | 'error_llm_websocket_runtime'
  | 'error_llm_websocket_corrupt_payload';

/** How an open socket ended by itself: lost (network, a close), runtime (the server closed with 1011 or 4000-4999), corrupt (a frame over the size limit, a flood of messages). */
export type LlmSocketEnd = 'lost' | 'runtime' | 'corrupt';

export interface LlmSocketHandlers {
  /** One text frame. */
  onMessage(text: string): void;
  /** The socket closed, not through close(); `detail` is for the log. */
  onClose(end: LlmSocketEnd, detail: string): void;
}

/** An open socket to the user's server. */
export interface LlmSocket {
  /** Sends one text frame. */
  send(text: string): void;
  /** Closes it (no onClose follows). */
  close(): void;
}

/** Dials `url`; rejects when the socket cannot be opened (refused destination, timeout, no upgrade). */
export type LlmSocketOpener = (url: string, handlers: LlmSocketHandlers) => Promise<LlmSocket>;

/** Longest wait for the begin message (response_id 0) once the socket is open, ms: without one, the user speaks first. */
export const BEGIN_WAIT_MS = 5_000;
/** Most characters of one response (all its streamed contents): beyond, the payload is corrupt. */
export const MAX_RESPONSE_CHARS = 10_000;
/** Most agent_interrupt events waiting to be spoken; more is a corrupt payload. */
export const MAX_PENDING_INTERRUPTS = 8;
/** With `auto_reconnect`: ping_pong interval, ms, and silence after which the connection counts as lost, ms (Retell's 2 s and 5 s). */
export const PING_INTERVAL_MS = 2_000;
export const PING_TIMEOUT_MS = 5_000;
/**
 * With `auto_reconnect`, after a loss the service dials again with exponential backoff and jitter:
 * the first attempt RECONNECT_FIRST_DELAY_MS after the loss, each wait doubling up to
 * RECONNECT_MAX_DELAY_MS, each scaled by a random factor in [0.8, 1.2). It gives up (the call ends
 * `error_llm_websocket_lost_connection`) when the next attempt would start more than
 * RECONNECT_BUDGET_MS after the loss: about five attempts over 8 s, enough for a server's redeploy.
 */
export const RECONNECT_FIRST_DELAY_MS = 500;
export const RECONNECT_MAX_DELAY_MS = 4_000;
export const RECONNECT_BUDGET_MS = 10_000;
/** Said once per loss when the caller is waiting for an answer while the service reconnects. */
export const HOLD_ON_TEXT = 'One moment, please.';

/** The wait before reconnection attempt `attempt` (0 = the first), ms; `random` in [0, 1). */
export function reconnectDelayMs(attempt: number, random: number): number {
  return Math.round(Math.min(RECONNECT_MAX_DELAY_MS, RECONNECT_FIRST_DELAY_MS * 2 ** attempt) * (0.8 + 0.4 * random));
}
/**
 * With `auto_reconnect`: reconnection attempts in the whole call, successful or not. The budget
 * counts across reopens: a server that accepts and then drops every connection is dialled at
 * most this often before the call ends `error_llm_websocket_lost_connection`.
 */
export const RECONNECT_ATTEMPTS_PER_CALL = 10;

/** What a CustomLlmEngine is built with (src/voice/engines/custom-llm.engine.ts). */
export interface CustomLlmEngineOptions {
  /** The agent's `llm_websocket_url`; the engine dials `{url}/{callId}`. */
  url: string;
  callId: string;
  open: LlmSocketOpener;
  /** The call object sent as `call_details` when the server's config asks for it. */
  callDetails: () => unknown;
  /** The server failed: the owner ends the call with `reason`. Called at most once. */
  onFailure: (reason: LlmWebsocketReason, detail: string) => void;
  /** The server sent an agent_interrupt: the owner has the pipeline speak it (VoicePipeline.speakUnprompted). */
  onUnprompted?: () => void;
  /** The server sent a `metadata` event: the owner passes it on to the web client. */
  onMetadata?: (metadata: unknown) => void;
  /** Timers: the begin wait, ping_pong, reconnection backoff; tests pass a ManualScheduler. */
  scheduler: Scheduler;
  /**
   * The agent's knowledge bases (issue 29): searched before each response_required, whose
   * `knowledge_base_chunks` carry what was found (docs/custom-llm.md). Absent: no such field.
   */
  contextSource?: TurnContextSource;
  /** Monotonic milliseconds, for the search's timing (RespondOptions.onTiming); default performance.now(). */
  now?: () => number;
  /** The backoff's jitter, in [0, 1); default Math.random. */
  random?: () => number;
  /** The call can be transferred (a phone call): a response's `transfer_number` is honoured; default false (refused, in the record). */
  canTransfer?: boolean;
}
