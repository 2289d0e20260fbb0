/**
 * Twilio's bidirectional media-stream protocol (twilio.com/docs/voice/media-streams/websocket-messages),
 * one schema per message, and the TwiML we answer with. Twilio sends `connected`, `start`,
 * `media` (μ-law 8 kHz, base64), `dtmf`, `mark` (echoed once the audio sent before it has played)
 * and `stop`; we send `media`, `mark` and `clear` (drops the audio not played yet: barge-in).
 *
 * The endpoint speaks a neutral `StreamMessage` through a `StreamDialect`: Telnyx's media streams
 * differ only in field names and the start's shape, so Telnyx is one more dialect (see
 * docs/telephony.md, "Telnyx").
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseBoundedJson } from '../../lib/bounded-json.ts';

/** The rate and codec of a media stream's audio, both ways. */
export const STREAM_SAMPLE_RATE = 8_000;
/** Longest text message read from a stream, characters: a 20 ms chunk is ~300; a start with custom parameters a few KB. */
export const MAX_STREAM_MESSAGE_CHARS = 16_384;
/** Largest audio payload one message may carry, bytes decoded (1 s of μ-law); Twilio sends 20 ms (160 bytes). */
export const MAX_MEDIA_PAYLOAD_BYTES = 8_000;

const Str = Type.String({ maxLength: 256 });

const Connected = Type.Object({ event: Type.Literal('connected'), protocol: Type.Optional(Str), version: Type.Optional(Str) });
const Start = Type.Object({
  event: Type.Literal('start'),
  streamSid: Str,
  start: Type.Object({
    streamSid: Type.Optional(Str),
    accountSid: Str,
    callSid: Str,
    tracks: Type.Optional(Type.Array(Str, { maxItems: 4 })),
    mediaFormat: Type.Optional(Type.Object({ encoding: Str, sampleRate: Type.Number(), channels: Type.Number() })),
    customParameters: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 2048 }))),
  }),
});
const Media = Type.Object({
  event: Type.Literal('media'),
  media: Type.Object({ track: Type.Optional(Str), chunk: Type.Optional(Str), timestamp: Type.Optional(Str), payload: Type.String({ maxLength: Math.ceil(MAX_MEDIA_PAYLOAD_BYTES / 3) * 4 }) }),
});
const Dtmf = Type.Object({ event: Type.Literal('dtmf'), dtmf: Type.Object({ track: Type.Optional(Str), digit: Type.String({ pattern: '^[0-9*#A-Da-d]$' }) }) });
const Mark = Type.Object({ event: Type.Literal('mark'), mark: Type.Object({ name: Str }) });
const Stop = Type.Object({ event: Type.Literal('stop') });

export type TwilioStart = Static<typeof Start>;

/** What a stream's peer said, in the endpoint's words (whatever carrier's dialect). */
export type StreamMessage =
  | { kind: 'connected' }
  | { kind: 'start'; streamId: string; callId: string; accountId: string; encoding: string | null; sampleRate: number | null; parameters: Record<string, string> }
  /** `chunk`: the carrier's running number of the message (gaps are loss); `timestampMs`: its time in the stream. */
  | { kind: 'media'; audio: Uint8Array; chunk: number | null; timestampMs: number | null }
  | { kind: 'dtmf'; digit: string }
  | { kind: 'mark'; name: string }
  | { kind: 'stop' }
  /** An event this server does not know (ignored: forward compatibility). */
  | { kind: 'unknown' };

/** One carrier's way of writing the stream's messages; the endpoint is the same for every carrier. */
export interface StreamDialect {
  /** The carrier's name: the call object's `media.transport`. */
  readonly transport: string;
  /** One text message from the carrier: the neutral message, or null when it is malformed. */
  parse(text: string): StreamMessage | null;
  /** Our audio (μ-law bytes) for the stream. */
  media(streamId: string, audio: Uint8Array): string;
  /** A mark the carrier echoes once the audio before it has played. */
  mark(streamId: string, name: string): string;
  /** Drops every piece of our audio the carrier has not played yet. */
  clear(streamId: string): string;
}

export const twilioDialect: StreamDialect = {
  transport: 'twilio',
  parse(text) {
    const parsed = parseBoundedJson(text, { maxChars: MAX_STREAM_MESSAGE_CHARS, maxDepth: 8 });
    if (!parsed.ok) return null;
    const value = parsed.value;
    if (typeof value !== 'object' || value === null) return null;
    const event = (value as { event?: unknown }).event;
    switch (event) {
      case 'media': {
        if (!Value.Check(Media, value)) return null;
        // Only the caller's audio: a stream asked for both tracks also carries ours back.
        if (value.media.track !== undefined && value.media.track !== 'inbound') return { kind: 'unknown' };
        return { kind: 'media', audio: Buffer.from(value.media.payload, 'base64'), chunk: wholeNumber(value.media.chunk), timestampMs: wholeNumber(value.media.timestamp) };
      }
      case 'mark':
        return Value.Check(Mark, value) ? { kind: 'mark', name: value.mark.name } : null;
      case 'dtmf':
        return Value.Check(Dtmf, value) ? { kind: 'dtmf', digit: value.dtmf.digit.toUpperCase() } : null;
      case 'start': {
        if (!Value.Check(Start, value)) return null;
        const s = value.start;
        return {
          kind: 'start',
          streamId: value.streamSid,
          callId: s.callSid,
          accountId: s.accountSid,
          encoding: s.mediaFormat?.encoding ?? null,
          sampleRate: s.mediaFormat?.sampleRate ?? null,
          parameters: s.customParameters ?? {},
        };
      }
      case 'connected':
        return Value.Check(Connected, value) ? { kind: 'connected' } : null;
      case 'stop':
        return Value.Check(Stop, value) ? { kind: 'stop' } : null;
      default:
        return typeof event === 'string' ? { kind: 'unknown' } : null;
    }
  },
  media: (streamSid, audio) => JSON.stringify({ event: 'media', streamSid, media: { payload: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength).toString('base64') } }),
  mark: (streamSid, name) => JSON.stringify({ event: 'mark', streamSid, mark: { name } }),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid }),
};

/** A decimal string as a number (Twilio writes numbers as strings), or null. */
function wholeNumber(text: string | undefined): number | null {
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : null;
}

/** The encoding Twilio names μ-law by in a start's mediaFormat. */
export const TWILIO_MULAW = 'audio/x-mulaw';

/** Text for an XML attribute or element. */
export function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);
}

/**
 * The voice webhook's answer: a bidirectional stream to `streamUrl` (wss://), carrying
 * `parameters` back to us in the start message's customParameters.
 */
export function connectStreamTwiml(streamUrl: string, parameters: Readonly<Record<string, string>>): string {
  const params = Object.entries(parameters)
    .map(([name, value]) => `<Parameter name="${xmlEscape(name)}" value="${xmlEscape(value)}"/>`)
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="${xmlEscape(streamUrl)}">${params}</Stream></Connect></Response>`;
}

/** A cold transfer: the live call leaves the stream and dials `destination` (E.164, or a SIP URI). */
export function dialTwiml(destination: string, callerId?: string): string {
  const attr = callerId ? ` callerId="${xmlEscape(callerId)}"` : '';
  const target = /^sips?:/.test(destination) ? `<Sip>${xmlEscape(destination)}</Sip>` : `<Number>${xmlEscape(destination)}</Number>`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial${attr}>${target}</Dial></Response>`;
}

/** A refusal: Twilio plays the caller a busy signal or hangs up. */
export function rejectTwiml(reason: 'busy' | 'rejected' = 'rejected'): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="${reason}"/></Response>`;
}
