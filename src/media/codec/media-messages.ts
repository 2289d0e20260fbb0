/**
 * The session's neutral events as the media protocol's server messages (docs/media-protocol.md),
 * in one place for every transport that speaks that protocol: the web call's WebSocket and the
 * WebRTC endpoint's data channel carry the same shapes.
 */
import type { CallEvent, TranscriptLine } from '../endpoint.ts';
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../../protocol/media.constants.ts';
import type { ServerMessage, TranscriptEntry } from '../../protocol/media.messages.ts';

/** Utterances an `update` message carries: the last ten (docs/media-protocol.md). */
export const TRANSCRIPT_WINDOW = 10;

/** The protocol message of one session event; `transport` is what `call_started` names. */
export function serverMessageOf(event: CallEvent, transport: string): ServerMessage {
  switch (event.type) {
    case 'started':
      return {
        type: 'call_started',
        protocol_version: PROTOCOL_VERSION,
        call_id: event.callId,
        sample_rate: PROTOCOL_SAMPLE_RATE,
        transport,
        agent: { agent_id: event.agentId, agent_version: event.agentVersion, agent_name: event.agentName },
      };
    case 'agent_talking':
      return { type: 'agent_start_talking', utterance_id: event.utteranceId };
    case 'agent_done':
      return { type: 'agent_stop_talking', utterance_id: event.utteranceId, cut_off: event.cutOff };
    case 'transcript':
      return { type: 'update', transcript: event.lines.slice(-TRANSCRIPT_WINDOW).map(toWire), final: true };
    case 'interim':
      return { type: 'update', transcript: [...event.lines.slice(-(TRANSCRIPT_WINDOW - 1)).map(toWire), { role: 'user', content: event.text }], final: false };
    case 'node_changed':
      return { type: 'node_transition', from: event.from, to: event.to };
    case 'metadata':
      return { type: 'metadata', metadata: event.metadata };
    case 'error':
      return { type: 'error', code: event.code, message: event.message };
  }
}

/** A transcript line as the protocol's `update` message carries it. */
function toWire(line: TranscriptLine): TranscriptEntry {
  return { role: line.role, content: line.text, ...(line.cutOff ? { cut_off: true } : {}) };
}
