/**
 * The web-call media protocol, version 1 (docs/media-protocol.md), as the browser sees it. The
 * messages are defined once in src/protocol/media.messages.ts; the SDK imports their types only,
 * so TypeBox stays out of the bundle, and checks each server message here with a small parser
 * typed by those definitions: a message the definition changes without this parser fails the
 * type check (and test/protocol/ checks the parser against the schemas).
 */
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../../../src/protocol/media.constants.ts';
import type { ServerMessage, TranscriptEntry } from '../../../src/protocol/media.messages.ts';

export { PROTOCOL_VERSION };
export { webCallUrl } from '../../../src/protocol/web-call-url.ts';
export type {
  CallStartedMessage,
  ClientMessage,
  ServerMessage,
  TranscriptEntry,
} from '../../../src/protocol/media.messages.ts';

/** The only wire rate of protocol version 1 (Hz), both directions (PROTOCOL_SAMPLE_RATE). */
export const WIRE_SAMPLE_RATE = PROTOCOL_SAMPLE_RATE;

type Json = Record<string, unknown>;
type ServerMessageType = ServerMessage['type'];
const isString = (v: unknown): v is string => typeof v === 'string';
const isInteger = (v: unknown): v is number => Number.isInteger(v);

/** One reader per server message type: each returns that message, or null when it is unusable. */
const READERS: { [K in ServerMessageType]: (m: Json) => Extract<ServerMessage, { type: K }> | null } = {
  call_started: (m) => {
    const agent = (typeof m.agent === 'object' && m.agent !== null ? m.agent : {}) as Json;
    if (!isString(m.call_id)) return null;
    return {
      type: 'call_started',
      protocol_version: isInteger(m.protocol_version) ? m.protocol_version : PROTOCOL_VERSION,
      call_id: m.call_id,
      sample_rate: isInteger(m.sample_rate) ? m.sample_rate : WIRE_SAMPLE_RATE,
      agent: {
        agent_id: isString(agent.agent_id) ? agent.agent_id : '',
        agent_version: isInteger(agent.agent_version) ? agent.agent_version : 0,
        agent_name: isString(agent.agent_name) ? agent.agent_name : null,
      },
    };
  },
  agent_start_talking: (m) => ({ type: 'agent_start_talking', utterance_id: isString(m.utterance_id) ? m.utterance_id : '' }),
  agent_stop_talking: (m) => ({ type: 'agent_stop_talking', utterance_id: isString(m.utterance_id) ? m.utterance_id : '', cut_off: m.cut_off === true }),
  clear: (m) => ({ type: 'clear', utterance_id: isString(m.utterance_id) ? m.utterance_id : '' }),
  update: (m) => {
    if (!Array.isArray(m.transcript)) return null;
    const transcript: TranscriptEntry[] = [];
    for (const item of m.transcript as unknown[]) {
      const entry = (typeof item === 'object' && item !== null ? item : {}) as Json;
      if ((entry.role !== 'agent' && entry.role !== 'user') || !isString(entry.content)) continue;
      transcript.push(entry.cut_off === true ? { role: entry.role, content: entry.content, cut_off: true } : { role: entry.role, content: entry.content });
    }
    return { type: 'update', transcript, final: m.final !== false };
  },
  node_transition: (m) => (isString(m.to) ? { type: 'node_transition', from: isString(m.from) ? m.from : null, to: m.to } : null),
  metadata: (m) => ({ type: 'metadata', metadata: m.metadata }),
  call_ended: (m) => ({
    type: 'call_ended',
    call_status: m.call_status === 'error' ? 'error' : 'ended',
    disconnection_reason: isString(m.disconnection_reason) ? m.disconnection_reason : 'unknown',
  }),
  error: (m) => ({ type: 'error', code: isString(m.code) ? m.code : 'unknown_error', message: isString(m.message) ? m.message : '' }),
  pong: (m) => ({ type: 'pong', id: m.id }),
};

/**
 * Parses one text message from the server. Returns null for anything that is not a known,
 * well-formed message: unknown types are ignored for forward compatibility.
 */
export function parseServerMessage(text: string): ServerMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const m = value as Json;
  // Own keys only: a `type` of "toString" or "__proto__" is not a message.
  if (!isString(m.type) || !Object.hasOwn(READERS, m.type)) return null;
  return READERS[m.type as ServerMessageType](m);
}
