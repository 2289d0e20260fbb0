/**
 * The web-call media protocol, version 1 (docs/media-protocol.md), as the browser sees it:
 * message shapes and a parser that checks each server message at the boundary.
 */

export const PROTOCOL_VERSION = 1;
/** The only wire rate of protocol version 1 (Hz), both directions. */
export const WIRE_SAMPLE_RATE = 16_000;
/** Path of the WebSocket endpoint on the server. */
export const WEB_CALL_PATH = '/v2/web-call';

export interface TranscriptEntry {
  role: 'agent' | 'user';
  content: string;
  cut_off?: boolean;
}

export interface CallStartedMessage {
  type: 'call_started';
  protocol_version: number;
  call_id: string;
  sample_rate: number;
  agent: { agent_id: string; agent_version: number; agent_name: string | null };
}
export interface AgentStartTalkingMessage {
  type: 'agent_start_talking';
  utterance_id: string;
}
export interface AgentStopTalkingMessage {
  type: 'agent_stop_talking';
  utterance_id: string;
  cut_off: boolean;
}
export interface ClearMessage {
  type: 'clear';
  utterance_id: string;
}
export interface UpdateMessage {
  type: 'update';
  transcript: TranscriptEntry[];
  final: boolean;
}
export interface NodeTransitionMessage {
  type: 'node_transition';
  from: string | null;
  to: string;
}
export interface CallEndedMessage {
  type: 'call_ended';
  call_status: 'ended' | 'error';
  disconnection_reason: string;
}
export interface ErrorMessage {
  type: 'error';
  code: string;
  message: string;
}
export interface PongMessage {
  type: 'pong';
  id: unknown;
}

export type ServerMessage =
  | CallStartedMessage
  | AgentStartTalkingMessage
  | AgentStopTalkingMessage
  | ClearMessage
  | UpdateMessage
  | NodeTransitionMessage
  | CallEndedMessage
  | ErrorMessage
  | PongMessage;

export type ClientMessage =
  | { type: 'join'; access_token: string; protocol_version: number; sample_rate: number }
  | { type: 'hangup' }
  | { type: 'ping'; id: unknown };

type Json = Record<string, unknown>;
const isString = (v: unknown): v is string => typeof v === 'string';

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
  switch (m.type) {
    case 'call_started': {
      const agent = (typeof m.agent === 'object' && m.agent !== null ? m.agent : {}) as Json;
      if (!isString(m.call_id)) return null;
      return {
        type: 'call_started',
        protocol_version: typeof m.protocol_version === 'number' ? m.protocol_version : PROTOCOL_VERSION,
        call_id: m.call_id,
        sample_rate: typeof m.sample_rate === 'number' ? m.sample_rate : WIRE_SAMPLE_RATE,
        agent: {
          agent_id: isString(agent.agent_id) ? agent.agent_id : '',
          agent_version: typeof agent.agent_version === 'number' ? agent.agent_version : 0,
          agent_name: isString(agent.agent_name) ? agent.agent_name : null,
        },
      };
    }
    case 'agent_start_talking':
      return { type: 'agent_start_talking', utterance_id: String(m.utterance_id ?? '') };
    case 'agent_stop_talking':
      return { type: 'agent_stop_talking', utterance_id: String(m.utterance_id ?? ''), cut_off: m.cut_off === true };
    case 'clear':
      return { type: 'clear', utterance_id: String(m.utterance_id ?? '') };
    case 'update': {
      if (!Array.isArray(m.transcript)) return null;
      const transcript: TranscriptEntry[] = [];
      for (const item of m.transcript as unknown[]) {
        const entry = (typeof item === 'object' && item !== null ? item : {}) as Json;
        if ((entry.role !== 'agent' && entry.role !== 'user') || !isString(entry.content)) continue;
        transcript.push(entry.cut_off === true ? { role: entry.role, content: entry.content, cut_off: true } : { role: entry.role, content: entry.content });
      }
      return { type: 'update', transcript, final: m.final !== false };
    }
    case 'node_transition':
      if (!isString(m.to)) return null;
      return { type: 'node_transition', from: isString(m.from) ? m.from : null, to: m.to };
    case 'call_ended':
      return {
        type: 'call_ended',
        call_status: m.call_status === 'error' ? 'error' : 'ended',
        disconnection_reason: isString(m.disconnection_reason) ? m.disconnection_reason : 'unknown',
      };
    case 'error':
      return { type: 'error', code: isString(m.code) ? m.code : 'unknown_error', message: isString(m.message) ? m.message : '' };
    case 'pong':
      return { type: 'pong', id: m.id };
    default:
      return null;
  }
}

/** The WebSocket URL of the media endpoint for an http(s) base URL (ws for http, wss for https). */
export function webCallUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  // Keep a base path: a server mounted under /voice/ serves /voice/v2/web-call.
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${WEB_CALL_PATH}`;
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`baseUrl must be an http(s) or ws(s) URL (got ${baseUrl})`);
  url.search = '';
  url.hash = '';
  return url.toString();
}
