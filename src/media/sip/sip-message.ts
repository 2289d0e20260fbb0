/**
 * SIP messages (RFC 3261 section 7): parsing with bounds, and the responses and requests the
 * endpoint writes. Header names are kept lower-case, compact forms expanded (7.3.3).
 */

/** Largest SIP message taken (a UDP datagram of a call's INVITE is a few KB; RFC 3261 18.1.1). */
export const MAX_SIP_MESSAGE_BYTES = 8_192;
/** Largest body (SDP) taken; larger is refused with 413. */
export const MAX_SIP_BODY_BYTES = 4_096;
const MAX_HEADERS = 64;

const COMPACT: Record<string, string> = {
  v: 'via', f: 'from', t: 'to', i: 'call-id', m: 'contact', l: 'content-length', c: 'content-type', k: 'supported', s: 'subject', e: 'content-encoding',
};

export interface SipHeaders {
  /** Every value of a header, in order (a comma-joined list stays one value). */
  all(name: string): string[];
  one(name: string): string | undefined;
}

export interface SipRequest {
  kind: 'request';
  method: string;
  uri: string;
  headers: SipHeaders;
  body: string;
}

export interface SipResponse {
  kind: 'response';
  status: number;
  reason: string;
  headers: SipHeaders;
  body: string;
}

export type SipMessage = SipRequest | SipResponse;

/** Why a message was refused: `status` is the response a request gets (400, 413), when it can be answered. */
export class SipParseError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

class HeaderMap implements SipHeaders {
  readonly #map = new Map<string, string[]>();
  add(name: string, value: string): void {
    const list = this.#map.get(name);
    if (list) list.push(value);
    else this.#map.set(name, [value]);
  }
  all(name: string): string[] {
    return this.#map.get(name) ?? [];
  }
  one(name: string): string | undefined {
    return this.#map.get(name)?.[0];
  }
}

/** Parses one message; throws SipParseError. The mandatory headers of 8.1.1 are checked. */
export function parseSipMessage(data: Buffer): SipMessage {
  if (data.length > MAX_SIP_MESSAGE_BYTES) throw new SipParseError(413, 'message too large');
  const text = data.toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) throw new SipParseError(400, 'no end of headers');
  const lines = text.slice(0, split).split('\r\n');
  const body = text.slice(split + 4);
  const start = lines.shift() ?? '';
  const headers = new HeaderMap();
  let count = 0;
  for (const line of lines) {
    if (/^[ \t]/.test(line)) throw new SipParseError(400, 'folded headers are not accepted');
    const colon = line.indexOf(':');
    if (colon <= 0) throw new SipParseError(400, 'malformed header');
    const rawName = line.slice(0, colon).trim().toLowerCase();
    if (!/^[a-z0-9!%*_+`'~.-]+$/.test(rawName)) throw new SipParseError(400, 'malformed header name');
    if (++count > MAX_HEADERS) throw new SipParseError(400, 'too many headers');
    headers.add(COMPACT[rawName] ?? rawName, line.slice(colon + 1).trim());
  }
  const length = headers.one('content-length');
  if (length !== undefined) {
    if (!/^[0-9]{1,6}$/.test(length)) throw new SipParseError(400, 'bad Content-Length');
    if (Number(length) > Buffer.byteLength(body, 'latin1')) throw new SipParseError(400, 'body shorter than Content-Length');
    if (Number(length) > MAX_SIP_BODY_BYTES) throw new SipParseError(413, 'body too large');
  }
  if (Buffer.byteLength(body, 'latin1') > MAX_SIP_BODY_BYTES && length === undefined) throw new SipParseError(413, 'body too large');
  const content = length === undefined ? body : body.slice(0, Number(length));
  const response = /^SIP\/2\.0 ([1-6][0-9]{2}) (.*)$/.exec(start);
  let message: SipMessage;
  if (response) {
    message = { kind: 'response', status: Number(response[1]), reason: response[2] ?? '', headers, body: content };
  } else {
    const request = /^([A-Z]{2,16}) (\S{1,1024}) SIP\/2\.0$/.exec(start);
    if (!request) throw new SipParseError(400, 'malformed start line');
    message = { kind: 'request', method: request[1] as string, uri: request[2] as string, headers, body: content };
  }
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) {
    if (headers.one(name) === undefined) throw new SipParseError(400, `missing ${name}`);
  }
  if (!/^[0-9]{1,10} [A-Z]{2,16}$/.test(headers.one('cseq') ?? '')) throw new SipParseError(400, 'malformed CSeq');
  if ((headers.one('call-id') ?? '').length > 256) throw new SipParseError(400, 'Call-ID too long');
  return message;
}

/** The `tag` parameter of a From or To header, if any. */
export function tagOf(header: string): string | null {
  return /;\s*tag=([^;>\s]+)/i.exec(header)?.[1] ?? null;
}

/** The URI of a From, To or Contact header (inside <> when there are any). */
export function uriOf(header: string): string {
  const angle = /<([^>]*)>/.exec(header);
  return ((angle ? angle[1] : undefined) ?? header.split(';')[0] ?? '').trim();
}

/** The user part of a sip: URI (`sip:+14155550100@host` -> `+14155550100`), or null. */
export function userOf(uri: string): string | null {
  const match = /^sips?:([^@;>]+)@/i.exec(uri);
  return match ? decodeURIComponent(match[1] as string) : null;
}

/** The host and port of a sip: URI; port null when not given. */
export function hostPortOf(uri: string): { host: string; port: number | null } | null {
  const match = /^sips?:(?:[^@]*@)?(\[[^\]]+\]|[^:;>?]+)(?::([0-9]{1,5}))?/i.exec(uri);
  if (!match) return null;
  return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: match[2] === undefined ? null : Number(match[2]) };
}

/** Writes a message: start line, headers in order, Content-Length, body. */
export function writeSipMessage(start: string, headers: Array<[string, string]>, body = ''): Buffer {
  const lines = [start, ...headers.map(([name, value]) => `${name}: ${value}`), `Content-Length: ${Buffer.byteLength(body)}`, '', body];
  return Buffer.from(lines.join('\r\n'));
}

/** A response to `request` (RFC 3261 8.2.6): its Via, From, Call-ID and CSeq, its To with `toTag` added when it has none. */
export function responseTo(request: SipRequest, status: number, reason: string, options: { toTag?: string; headers?: Array<[string, string]>; body?: string } = {}): Buffer {
  const to = request.headers.one('to') ?? '';
  const headers: Array<[string, string]> = [
    ...request.headers.all('via').map((via): [string, string] => ['Via', via]),
    ['From', request.headers.one('from') ?? ''],
    ['To', options.toTag !== undefined && tagOf(to) === null ? `${to};tag=${options.toTag}` : to],
    ['Call-ID', request.headers.one('call-id') ?? ''],
    ['CSeq', request.headers.one('cseq') ?? ''],
    ...(options.headers ?? []),
  ];
  return writeSipMessage(`SIP/2.0 ${status} ${reason}`, headers, options.body ?? '');
}

/** The media of an SDP offer that the endpoint uses: the audio stream's address and its payload types. */
export interface SdpAudio {
  address: string;
  port: number;
  /** Payload type to encoding name (lower-case) and clock rate, from rtpmap or RFC 3551's static types, and its fmtp parameters. */
  formats: Array<{ payloadType: number; encoding: string; clockRate: number; fmtp?: string }>;
  /** The packet length the far end asks to receive (`a=ptime`, RFC 4566 6), and the longest it takes (`a=maxptime`, RFC 3264), ms; null when not given. */
  ptimeMs: number | null;
  maxptimeMs: number | null;
}

/** The first audio stream of an SDP body (RFC 4566), or why there is none. */
export function parseSdpAudio(sdp: string): SdpAudio | { refusal: string } {
  let sessionAddress: string | null = null;
  let audio: { port: number; payloadTypes: number[]; address: string | null; rtpmap: Map<number, { encoding: string; clockRate: number }>; fmtp: Map<number, string> } | null = null;
  let inAudio = false;
  // Session-level ptime applies to the stream unless its own section says otherwise.
  const ptime = { session: null as number | null, audio: null as number | null };
  const maxptime = { session: null as number | null, audio: null as number | null };
  for (const line of sdp.split(/\r?\n/)) {
    if (line.startsWith('m=')) {
      if (audio) break;
      const m = /^m=audio ([0-9]{1,5}) RTP\/AVP((?: [0-9]{1,3})+)$/.exec(line.trim());
      inAudio = m !== null;
      if (m) audio = { port: Number(m[1]), payloadTypes: (m[2] as string).trim().split(' ').map(Number), address: null, rtpmap: new Map(), fmtp: new Map() };
      continue;
    }
    const c = /^c=IN IP[46] ([0-9A-Fa-f.:]+)/.exec(line.trim());
    if (c) {
      if (inAudio && audio) audio.address = c[1] as string;
      else if (!audio) sessionAddress = c[1] as string;
      continue;
    }
    const rtpmap = /^a=rtpmap:([0-9]{1,3}) ([A-Za-z0-9_.-]+)\/([0-9]+)/.exec(line.trim());
    if (rtpmap && inAudio && audio) audio.rtpmap.set(Number(rtpmap[1]), { encoding: (rtpmap[2] as string).toLowerCase(), clockRate: Number(rtpmap[3]) });
    const fmtp = /^a=fmtp:([0-9]{1,3}) (.{1,256})$/.exec(line.trim());
    if (fmtp && inAudio && audio) audio.fmtp.set(Number(fmtp[1]), fmtp[2] as string);
    const packetTime = /^a=(max)?ptime:([0-9]{1,4})(?:\.[0-9]+)?$/.exec(line.trim());
    if (packetTime && (inAudio || !audio)) (packetTime[1] ? maxptime : ptime)[inAudio ? 'audio' : 'session'] = Number(packetTime[2]);
  }
  if (!audio) return { refusal: 'no RTP/AVP audio stream' };
  const address = audio.address ?? sessionAddress;
  if (!address) return { refusal: 'no connection address' };
  const formats = audio.payloadTypes.map((payloadType) => {
    const mapped = audio.rtpmap.get(payloadType);
    const fmtp = audio.fmtp.get(payloadType);
    if (mapped) return { payloadType, ...mapped, ...(fmtp === undefined ? {} : { fmtp }) };
    if (payloadType === 0) return { payloadType, encoding: 'pcmu', clockRate: 8000 };
    if (payloadType === 8) return { payloadType, encoding: 'pcma', clockRate: 8000 };
    return { payloadType, encoding: 'unknown', clockRate: 0 };
  });
  return { address, port: audio.port, formats, ptimeMs: ptime.audio ?? ptime.session, maxptimeMs: maxptime.audio ?? maxptime.session };
}

/** A 400 (or 413) to a request that could not be parsed, when enough of it is there to answer (a Via); null otherwise. */
export function malformedAnswer(data: Buffer, status: number): Buffer | null {
  const text = data.subarray(0, MAX_SIP_MESSAGE_BYTES).toString('latin1');
  if (text.startsWith('SIP/2.0')) return null;
  const header = (name: string, compact: string) =>
    text.split('\r\n').filter((line) => new RegExp(`^(${name}|${compact})\\s*:`, 'i').test(line)).map((line) => line.slice(line.indexOf(':') + 1).trim());
  const vias = header('via', 'v');
  if (vias.length === 0) return null;
  const headers: Array<[string, string]> = [
    ...vias.slice(0, 8).map((via): [string, string] => ['Via', via.slice(0, 512)]),
    ['From', (header('from', 'f')[0] ?? '').slice(0, 512)],
    ['To', (header('to', 't')[0] ?? '').slice(0, 512)],
    ['Call-ID', (header('call-id', 'i')[0] ?? '').slice(0, 256)],
    ['CSeq', (header('cseq', 'cseq')[0] ?? '').slice(0, 64)],
  ];
  return writeSipMessage(`SIP/2.0 ${status} ${status === 413 ? 'Request Entity Too Large' : 'Bad Request'}`, headers);
}
