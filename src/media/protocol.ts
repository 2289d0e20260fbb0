import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * Wire shapes of the web-call media protocol, version 1 (docs/media-protocol.md). One schema per
 * client message; server events are typed here and built only by the call session and transport.
 */
export const PROTOCOL_VERSION = 1;
/** The only audio rate of version 1: 16-bit LE mono PCM at 16 kHz, both ways. */
export const PROTOCOL_SAMPLE_RATE = 16_000;
/** The WebSocket path of the endpoint. */
export const WEB_CALL_PATH = '/v2/web-call';
/** The first message must arrive within this long of the upgrade, ms. */
export const JOIN_TIMEOUT_MS = 5_000;

/** Close codes (4xxx are ours; 1000/1001/1011 are RFC 6455's). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  serverError: 1011,
  badMessage: 4400,
  unauthorized: 4401,
  joinTimeout: 4408,
  unavailable: 4503,
} as const;

/** Refusal codes of a join, with their close codes. */
export const REFUSALS = {
  token_invalid: CLOSE.unauthorized,
  token_expired: CLOSE.unauthorized,
  token_used: CLOSE.unauthorized,
  join_timeout: CLOSE.joinTimeout,
  unsupported_protocol: CLOSE.badMessage,
  bad_message: CLOSE.badMessage,
  engine_unavailable: CLOSE.unavailable,
  server_shutting_down: CLOSE.goingAway,
} as const;
export type RefusalCode = keyof typeof REFUSALS;

export const JoinMessage = Type.Object({
  type: Type.Literal('join'),
  access_token: Type.String({ minLength: 1, maxLength: 4096 }),
  protocol_version: Type.Integer(),
  sample_rate: Type.Integer(),
});
export type JoinMessage = Static<typeof JoinMessage>;

export const HangupMessage = Type.Object({ type: Type.Literal('hangup') });
export const PingMessage = Type.Object({ type: Type.Literal('ping'), id: Type.Optional(Type.Unknown()) });

/** A client message after the join: hangup, ping, or an unknown type (ignored). */
export type ClientMessage =
  | { type: 'hangup' }
  | { type: 'ping'; id?: unknown }
  | { type: 'unknown' };

/** Parses the first message; returns the join or why it is refused. */
export function parseJoin(text: string): { ok: true; join: JoinMessage } | { ok: false; code: 'bad_message' | 'unsupported_protocol'; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'bad_message', message: 'The first message must be a JSON join message.' };
  }
  if (!Value.Check(JoinMessage, value)) {
    return { ok: false, code: 'bad_message', message: 'The first message must be {"type":"join","access_token":...,"protocol_version":1,"sample_rate":16000}.' };
  }
  if (value.protocol_version !== PROTOCOL_VERSION) {
    return { ok: false, code: 'unsupported_protocol', message: `protocol_version ${value.protocol_version} is not supported; this server speaks ${PROTOCOL_VERSION}.` };
  }
  if (value.sample_rate !== PROTOCOL_SAMPLE_RATE) {
    return { ok: false, code: 'unsupported_protocol', message: `sample_rate ${value.sample_rate} is not supported; version 1 carries ${PROTOCOL_SAMPLE_RATE} only.` };
  }
  return { ok: true, join: value };
}

/** Parses a text message after the join; null when it is malformed (answered with bad_message). */
export function parseClientMessage(text: string): ClientMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || typeof (value as { type?: unknown }).type !== 'string') return null;
  if (Value.Check(HangupMessage, value)) return { type: 'hangup' };
  if (Value.Check(PingMessage, value)) return { type: 'ping', id: value.id };
  const type = (value as { type: string }).type;
  // A known type with a wrong shape is malformed; an unknown type is ignored (forward compatibility).
  return type === 'hangup' || type === 'ping' || type === 'join' ? null : { type: 'unknown' };
}

/** One utterance as the `update` event carries it. */
export interface WireUtterance {
  role: 'agent' | 'user';
  content: string;
  cut_off?: boolean;
}

/** Server -> client events (JSON text messages). */
export type ServerEvent =
  | {
      type: 'call_started';
      protocol_version: number;
      call_id: string;
      sample_rate: number;
      agent: { agent_id: string; agent_version: number; agent_name: string | null };
    }
  | { type: 'agent_start_talking'; utterance_id: string }
  | { type: 'agent_stop_talking'; utterance_id: string; cut_off: boolean }
  | { type: 'clear'; utterance_id: string }
  | { type: 'update'; transcript: WireUtterance[]; final: boolean }
  | { type: 'node_transition'; from: string; to: string }
  | { type: 'call_ended'; call_status: 'ended' | 'error'; disconnection_reason: string }
  | { type: 'error'; code: string; message: string }
  | { type: 'pong'; id: unknown };
