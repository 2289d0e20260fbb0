/**
 * The SDP (RFC 4566, the offer/answer of RFC 3264) the SIP endpoint writes and chooses from: our
 * answer to a caller's offer, our offer on a call we place, and the codec taken from either side's.
 */
import { type G711Codec, PCMA_PAYLOAD_TYPE, PCMU_PAYLOAD_TYPE } from '../codec/g711.ts';
import type { SdpAudio } from './sip-message.ts';

/** The dynamic payload type we offer telephone-event (RFC 4733) on. */
const TELEPHONE_EVENT_PAYLOAD_TYPE = 101;

/** The codec answered: μ-law first, then A-law (what the caller offered of them), and telephone-event if offered. */
export function chooseCodec(offer: SdpAudio): { codec: G711Codec; payloadType: number; eventPayloadType: number | null } | null {
  const event = offer.formats.find((f) => f.encoding === 'telephone-event' && f.clockRate === 8000);
  for (const [codec, name, payloadType] of [['pcmu', 'pcmu', PCMU_PAYLOAD_TYPE], ['pcma', 'pcma', PCMA_PAYLOAD_TYPE]] as const) {
    const format = offer.formats.find((f) => f.encoding === name && f.clockRate === 8000);
    if (format) return { codec, payloadType: format.payloadType ?? payloadType, eventPayloadType: event?.payloadType ?? null };
  }
  return null;
}

export function answerSdp(host: string, port: number, media: { codec: G711Codec; payloadType: number; eventPayloadType: number | null }): string {
  return sessionSdp(host, port, [
    { payloadType: media.payloadType, rtpmap: `${media.codec === 'pcmu' ? 'PCMU' : 'PCMA'}/8000` },
    ...(media.eventPayloadType === null ? [] : [telephoneEvent(media.eventPayloadType)]),
  ]);
}

/** Our SDP offer (RFC 3264): PCMU, PCMA and telephone-event on the call's RTP port. */
export function offerSdp(host: string, port: number): string {
  return sessionSdp(host, port, [
    { payloadType: 0, rtpmap: 'PCMU/8000' },
    { payloadType: 8, rtpmap: 'PCMA/8000' },
    telephoneEvent(TELEPHONE_EVENT_PAYLOAD_TYPE),
  ]);
}

interface SdpFormat {
  payloadType: number;
  rtpmap: string;
  fmtp?: string;
}

const telephoneEvent = (payloadType: number): SdpFormat => ({ payloadType, rtpmap: 'telephone-event/8000', fmtp: '0-16' });

/** One audio stream's session description, 20 ms packets both ways, the formats in order of preference. */
function sessionSdp(host: string, port: number, formats: readonly SdpFormat[]): string {
  const family = host.includes(':') ? 'IP6' : 'IP4';
  const session = Date.now();
  return [
    'v=0',
    `o=switchboard ${session} ${session} IN ${family} ${host}`,
    's=switchboard',
    `c=IN ${family} ${host}`,
    't=0 0',
    `m=audio ${port} RTP/AVP ${formats.map((f) => f.payloadType).join(' ')}`,
    ...formats.flatMap((f) => [`a=rtpmap:${f.payloadType} ${f.rtpmap}`, ...(f.fmtp ? [`a=fmtp:${f.payloadType} ${f.fmtp}`] : [])]),
    'a=ptime:20',
    'a=sendrecv',
    '',
  ].join('\r\n');
}
