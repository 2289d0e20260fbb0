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

/** For each status, the statuses a call in it may move to: the one statement of the machine above. */
const NEXT: Readonly<Record<CallStatus, readonly CallStatus[]>> = {
  registered: ['ongoing', 'error', 'ended'],
  ongoing: ['ended', 'error'],
  ended: [],
  error: [],
};

/** Whether a call in status `from` may move to status `to`. */
export function canTransition(from: CallStatus, to: CallStatus): boolean {
  return NEXT[from].includes(to);
}

/**
 * The statuses from which a call may move to `to`, in the order of {@link CALL_STATUSES}: the
 * `from` list of the storage's guarded update (`CallRepository.transition`), which makes the rule
 * hold across servers.
 */
export function statusesThatCanBecome(to: CallStatus): CallStatus[] {
  return CALL_STATUSES.filter((from) => canTransition(from, to));
}

/** Whether `status` is final (`ended` or `error`): a call in it moves no further. */
export function isFinal(status: CallStatus): boolean {
  return NEXT[status].length === 0;
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
  // Issue 24, Retell's reasons for outbound phone calls that were not answered, and answering machines.
  'dial_busy',
  'dial_failed',
  'dial_no_answer',
  'voicemail_reached',
  'call_transfer',
] as const;
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

export function statusForReason(reason: DisconnectionReason): CallStatus {
  return reason.startsWith('error_') ? 'error' : 'ended';
}
