/**
 * The audio codecs of the SIP endpoint's RTP, behind one interface: G.711 (μ-law, A-law) at 8 kHz,
 * and Opus (RFC 7587) on its 48 kHz RTP clock, encoded from and decoded to the pipeline's 16 kHz
 * directly (libopus resamples inside the codec), with in-band FEC and packet-loss concealment for
 * what the caller's packets lost, as the WebRTC endpoint does.
 */
import { type G711Codec, decodeG711, encodeG711 } from '../codec/g711.ts';
import { OpusCodec } from '../../providers/audio/opus.ts';

export type SipCodecName = G711Codec | 'opus';

/** The codec negotiated for a call (./sdp.ts chooses it from an offer or an answer). */
export interface RtpMedia {
  codec: SipCodecName;
  payloadType: number;
  /** telephone-event's payload type (RFC 4733), null when the far end did not take it. */
  eventPayloadType: number | null;
  /** telephone-event's clock, Hz: what the far end's SDP gave it (8000, or 48000 beside Opus). */
  eventClockRate: number;
  /** The far end asked for discontinuous transmission (Opus's `usedtx=1`). */
  dtx: boolean;
  /** The length of the packets we send, ms (./sdp.ts sendPtimeMs: the far end's ptime and maxptime). */
  ptimeMs: number;
}

export interface RtpCodec {
  readonly name: SipCodecName;
  /** The RTP timestamp clock, Hz. */
  readonly clockRate: number;
  /** The rate of the PCM in and out, Hz: the call's rate (G.711 8 kHz, never resampled). */
  readonly sampleRate: 8000 | 16000;
  /** PCM samples in one 20 ms packet we send. */
  readonly frameSamples: number;
  /** One packet's payload from `frame` (a whole packet length's samples: ./sdp.ts names the lengths each codec sends). */
  encode(frame: Int16Array): Uint8Array;
  /** The samples (at `sampleRate`) one packet's payload holds, read without decoding it; 0 when it cannot say. */
  samplesOf(payload: Buffer): number;
  /** One packet's audio (any length the codec allows); null when the payload is not this codec's. */
  decode(payload: Buffer): Int16Array | null;
  /**
   * `samples` of audio lost just before `next` (a gap in the sequence), rebuilt where the codec can
   * (Opus: the last frame from `next`'s in-band FEC copy, any before it concealed); null where it
   * cannot (G.711: the gap stays a gap).
   */
  repair(next: Buffer, samples: number): Int16Array | null;
  close(): void;
}

/** Gaps longer than this (1 s at 16 kHz) are a stall, not loss: not repaired. */
export const MAX_REPAIR_SAMPLES = 16_000;

export function createRtpCodec(media: RtpMedia): RtpCodec {
  return media.codec === 'opus' ? new OpusRtpCodec(media.dtx) : new G711RtpCodec(media.codec);
}

class G711RtpCodec implements RtpCodec {
  readonly clockRate = 8000;
  readonly sampleRate = 8000;
  readonly frameSamples = 160;
  readonly name: G711Codec;

  constructor(name: G711Codec) {
    this.name = name;
  }

  encode(frame: Int16Array): Uint8Array {
    return encodeG711(this.name, frame);
  }

  samplesOf(payload: Buffer): number {
    return payload.length;
  }

  decode(payload: Buffer): Int16Array {
    return decodeG711(this.name, payload);
  }

  repair(): null {
    return null;
  }

  close(): void {}
}

class OpusRtpCodec implements RtpCodec {
  readonly name = 'opus';
  readonly clockRate = 48_000;
  readonly sampleRate = 16_000;
  readonly frameSamples = 320;
  readonly #opus: OpusCodec;

  constructor(dtx: boolean) {
    this.#opus = new OpusCodec({ dtx });
  }

  encode(frame: Int16Array): Uint8Array {
    return this.#opus.encode(frame, frame.length);
  }

  samplesOf(payload: Buffer): number {
    return opusPacketSamples(payload, this.sampleRate);
  }

  decode(payload: Buffer): Int16Array | null {
    return this.#opus.decode(payload);
  }

  repair(next: Buffer, samples: number): Int16Array {
    const fecSamples = Math.min(samples, this.frameSamples);
    const recovered = this.#opus.recover(next, fecSamples) ?? new Int16Array(fecSamples);
    if (samples === fecSamples) return recovered;
    const out = new Int16Array(samples);
    out.set(this.#opus.conceal(samples - fecSamples));
    out.set(recovered, samples - fecSamples);
    return out;
  }

  close(): void {
    this.#opus.close();
  }
}

/** Opus frame lengths by the TOC byte's configuration (RFC 6716 3.1), in tenths of a ms: SILK, hybrid, CELT. */
const SILK_TENTHS = [100, 200, 400, 600];
const HYBRID_TENTHS = [100, 200];
const CELT_TENTHS = [25, 50, 100, 200];

/** The samples at `sampleRate` an Opus packet holds, from its TOC byte and frame count (RFC 6716 3.1, 3.2.5); at most 120 ms. */
export function opusPacketSamples(packet: Buffer, sampleRate: number): number {
  const toc = packet[0];
  if (toc === undefined) return 0;
  const config = toc >> 3;
  const tenths = config < 12 ? SILK_TENTHS[config % 4] : config < 16 ? HYBRID_TENTHS[config % 2] : CELT_TENTHS[config % 4];
  const code = toc & 0x03;
  const frames = code === 0 ? 1 : code < 3 ? 2 : (packet[1] ?? 0) & 0x3f;
  return Math.round((Math.min(frames * (tenths as number), 1_200) * sampleRate) / 10_000);
}
