/**
 * The SDP (RFC 4566, the offer/answer of RFC 3264) the SIP endpoint writes and chooses from: our
 * answer to a caller's offer, our offer on a call we place, and the codec taken from either side's.
 *
 * The preference (SIP_CODECS, by default): Opus (RFC 7587) whenever the other side offers it (its
 * wideband audio is what the recogniser wants, and its FEC rides out loss), then G.711 μ-law, then
 * A-law, wherever the other side lists them. telephone-event
 * (RFC 4733) follows the other side: at Opus's 48 kHz clock when it offers that, else at 8 kHz.
 * The packets we send follow the other side's `a=ptime` and `a=maxptime` (sendPtimeMs); we take
 * packets of any length.
 */
import type { SipCodec } from '../../config/sip.config.ts';
import { PCMA_PAYLOAD_TYPE, PCMU_PAYLOAD_TYPE } from '../codec/g711.ts';
import type { RtpMedia } from './rtp-codec.ts';
import type { SdpAudio } from './sip-message.ts';

/** The dynamic payload types of our offer: Opus, and telephone-event at 8 and 48 kHz. */
const OPUS_PAYLOAD_TYPE = 96;
const TELEPHONE_EVENT_PAYLOAD_TYPE = 101;
const TELEPHONE_EVENT_48K_PAYLOAD_TYPE = 102;
/**
 * What we ask of the far end's Opus encoder and say of ours (RFC 7587 7.1): in-band FEC, mono,
 * nothing above 16 kHz (the pipeline's rate: libopus decodes to it directly), 20 ms packets.
 */
const OPUS_FMTP = 'maxplaybackrate=16000;sprop-maxcapturerate=16000;stereo=0;sprop-stereo=0;useinbandfec=1';

type Format = SdpAudio['formats'][number];

/**
 * The packet lengths we send, ms: G.711 in any whole number of 10 ms (RFC 3551 4.5 lets a packet
 * hold any number of samples; 10 to 60 ms are what trunks use), Opus in one frame of its own
 * lengths (RFC 6716 2.1.4: 10, 20, 40 or 60 ms; RFC 7587 4 lets a sender choose).
 */
const G711_PTIMES_MS = [10, 20, 30, 40, 50, 60];
const OPUS_PTIMES_MS = [10, 20, 40, 60];
/** What we send when the far end does not say (RFC 3551's default for G.711, and Opus's usual). */
export const DEFAULT_PTIME_MS = 20;

/**
 * The packet length we send to a far end whose SDP asked for `ptimeMs` (null: not said) and takes
 * at most `maxptimeMs`: the longest length the codec allows that is no longer than either; the
 * shortest the codec allows when none is.
 */
export function sendPtimeMs(codec: RtpMedia['codec'], ptimeMs: number | null, maxptimeMs: number | null): number {
  const lengths = codec === 'opus' ? OPUS_PTIMES_MS : G711_PTIMES_MS;
  const limit = Math.min(ptimeMs ?? DEFAULT_PTIME_MS, maxptimeMs ?? Infinity);
  return lengths.filter((ms) => ms <= limit).at(-1) ?? (lengths[0] as number);
}

/** SIP_CODECS's default (src/config/sip.config.ts): Opus, then μ-law, then A-law. */
const DEFAULT_PREFERENCE: readonly SipCodec[] = ['opus', 'pcmu', 'pcma'];

/** The codec taken from an offer (or from the answer to our offer), the first of `preference` it has; null when none is shared. */
export function chooseCodec(offer: SdpAudio, preference: readonly SipCodec[] = DEFAULT_PREFERENCE): RtpMedia | null {
  const find = (name: string, clockRate: number) => offer.formats.find((f) => f.encoding === name && f.clockRate === clockRate);
  for (const codec of preference) {
    if (codec === 'opus') {
      const opus = find('opus', 48_000);
      if (!opus) continue;
      const event = find('telephone-event', 48_000) ?? find('telephone-event', 8000);
      return { codec, payloadType: opus.payloadType, ...eventOf(event), dtx: fmtpParam(opus, 'usedtx') === '1', ptimeMs: sendPtimeMs(codec, offer.ptimeMs, offer.maxptimeMs) };
    }
    const format = find(codec, 8000);
    if (format) return { codec, payloadType: format.payloadType, ...eventOf(find('telephone-event', 8000)), dtx: false, ptimeMs: sendPtimeMs(codec, offer.ptimeMs, offer.maxptimeMs) };
  }
  return null;
}

function eventOf(event: Format | undefined): Pick<RtpMedia, 'eventPayloadType' | 'eventClockRate'> {
  return { eventPayloadType: event?.payloadType ?? null, eventClockRate: event?.clockRate ?? 8000 };
}

/** One `name=value` of a format's fmtp (RFC 7587's are `;`-separated), or undefined. */
function fmtpParam(format: Format, name: string): string | undefined {
  for (const part of (format.fmtp ?? '').split(';')) {
    const [key, value] = part.split('=');
    if (key?.trim().toLowerCase() === name) return value?.trim();
  }
  return undefined;
}

export function answerSdp(host: string, port: number, media: RtpMedia): string {
  const audio: SdpFormat =
    media.codec === 'opus'
      ? { payloadType: media.payloadType, rtpmap: 'opus/48000/2', fmtp: OPUS_FMTP }
      : { payloadType: media.payloadType, rtpmap: `${media.codec === 'pcmu' ? 'PCMU' : 'PCMA'}/8000` };
  // The answer asks for packets as long as the ones we send: the stream is the same length both ways.
  return sessionSdp(host, port, [audio, ...(media.eventPayloadType === null ? [] : [telephoneEvent(media.eventPayloadType, media.eventClockRate)])], media.ptimeMs);
}

/** Our SDP offer (RFC 3264): `codecs` in order (by default Opus, PCMU, PCMA) and telephone-event (48 kHz beside Opus, and 8 kHz) on the call's RTP port. */
export function offerSdp(host: string, port: number, codecs: readonly SipCodec[] = DEFAULT_PREFERENCE): string {
  const formats: Record<SipCodec, SdpFormat> = {
    opus: { payloadType: OPUS_PAYLOAD_TYPE, rtpmap: 'opus/48000/2', fmtp: OPUS_FMTP },
    pcmu: { payloadType: PCMU_PAYLOAD_TYPE, rtpmap: 'PCMU/8000' },
    pcma: { payloadType: PCMA_PAYLOAD_TYPE, rtpmap: 'PCMA/8000' },
  };
  return sessionSdp(host, port, [
    ...codecs.map((codec) => formats[codec]),
    ...(codecs.includes('opus') ? [telephoneEvent(TELEPHONE_EVENT_48K_PAYLOAD_TYPE, 48_000)] : []),
    telephoneEvent(TELEPHONE_EVENT_PAYLOAD_TYPE, 8000),
  ]);
}

interface SdpFormat {
  payloadType: number;
  rtpmap: string;
  fmtp?: string;
}

const telephoneEvent = (payloadType: number, clockRate: number): SdpFormat => ({ payloadType, rtpmap: `telephone-event/${clockRate}`, fmtp: '0-16' });

/** One audio stream's session description, packets of `ptimeMs` asked for, the formats in order of preference. */
function sessionSdp(host: string, port: number, formats: readonly SdpFormat[], ptimeMs = DEFAULT_PTIME_MS): string {
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
    `a=ptime:${ptimeMs}`,
    'a=sendrecv',
    '',
  ].join('\r\n');
}
