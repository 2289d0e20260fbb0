/**
 * The call status machine:
 *
 *   registered --join--> ongoing --hangup/timeout/...--> ended
 *        |                  |
 *        +---(not joined)---+---(failure)--> error
 *
 * `ended` and `error` are final.
 */
export const CALL_STATUSES = ['registered', 'ongoing', 'ended', 'error'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

const NEXT: Record<CallStatus, readonly CallStatus[]> = {
  registered: ['ongoing', 'error', 'ended'],
  ongoing: ['ended', 'error'],
  ended: [],
  error: [],
};

export function canTransition(from: CallStatus, to: CallStatus): boolean {
  return NEXT[from].includes(to);
}

export function isFinal(status: CallStatus): boolean {
  return status === 'ended' || status === 'error';
}

/** Why a call ended. Reasons starting with `error_` put the call in status `error`. */
export const DISCONNECTION_REASONS = [
  'user_hangup',
  'agent_hangup',
  'inactivity',
  'max_duration_reached',
  'server_shutdown',
  'client_disconnected',
  'manual_stopped',
  'error_user_not_joined',
  'error_asr',
  'error_llm',
  'error_llm_websocket_open',
  'error_llm_websocket_lost_connection',
  'error_llm_websocket_runtime',
  'error_llm_websocket_corrupt_payload',
  'error_tts',
  'error_no_audio_received',
  'error_engine_unavailable',
  'error_client_flood',
  'error_server_lost',
  'error_unknown',
] as const;
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

export function statusForReason(reason: DisconnectionReason): CallStatus {
  return reason.startsWith('error_') ? 'error' : 'ended';
}
