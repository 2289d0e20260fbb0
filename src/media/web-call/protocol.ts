import { Value } from '@sinclair/typebox/value';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../../protocol/media.constants.ts';
import { HangupMessage, JoinMessage, PingMessage } from '../../protocol/media.messages.ts';

/**
 * The server's parsing of client messages of the web-call media protocol (docs/media-protocol.md),
 * against the one definition of each message in src/protocol/media.messages.ts.
 */

/** A client message after the join: hangup, ping, or an unknown type (ignored). */
export type InCallMessage = HangupMessage | PingMessage | { type: 'unknown' };

/** Parses the first message; returns the join or why it is refused. */
export function parseJoin(text: string): { ok: true; join: JoinMessage } | { ok: false; code: 'bad_message' | 'unsupported_protocol'; message: string } {
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) return { ok: false, code: 'bad_message', message: 'The first message must be a JSON join message.' };
  const value = parsed.value;
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
export function parseClientMessage(text: string): InCallMessage | null {
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) return null;
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || typeof (value as { type?: unknown }).type !== 'string') return null;
  if (Value.Check(HangupMessage, value)) return { type: 'hangup' };
  if (Value.Check(PingMessage, value)) return { type: 'ping', id: value.id };
  const type = (value as { type: string }).type;
  // A known type with a wrong shape is malformed; an unknown type is ignored (forward compatibility).
  return type === 'hangup' || type === 'ping' || type === 'join' ? null : { type: 'unknown' };
}
