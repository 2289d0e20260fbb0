/**
 * G.711 (ITU-T G.711): μ-law (PCMU, ./mulaw.ts) and A-law (PCMA), 8-bit companded samples of
 * 8 kHz telephone audio, each to and from 16-bit linear PCM. Table-driven decoding; A-law is
 * encoded by the segment search of the reference implementation.
 */
import { decodeMulaw, encodeMulaw } from './mulaw.ts';

/** The RTP static payload types of G.711 (RFC 3551 table 4). */
export const PCMU_PAYLOAD_TYPE = 0;
export const PCMA_PAYLOAD_TYPE = 8;

export type G711Codec = 'pcmu' | 'pcma';

/** The 16-bit linear value of each of the 256 A-law bytes. */
const ALAW_DECODE = (() => {
  const table = new Int16Array(256);
  for (let i = 0; i < 256; i++) {
    const a = i ^ 0x55;
    let v = (a & 0x0f) << 4;
    const seg = (a & 0x70) >> 4;
    if (seg === 0) v += 8;
    else if (seg === 1) v += 0x108;
    else v = (v + 0x108) << (seg - 1);
    table[i] = a & 0x80 ? v : -v;
  }
  return table;
})();

export function decodeG711(codec: G711Codec, bytes: Uint8Array): Int16Array {
  if (codec === 'pcmu') return decodeMulaw(bytes);
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = ALAW_DECODE[bytes[i]!]!;
  return out;
}

export function encodeG711(codec: G711Codec, pcm: Int16Array): Uint8Array {
  if (codec === 'pcmu') return encodeMulaw(pcm);
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = linearToAlaw(pcm[i]!);
  return out;
}

/** Upper ends of the A-law segments, for a 13-bit magnitude. */
const ALAW_SEGMENT_ENDS = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff];

function linearToAlaw(sample: number): number {
  let pcm = sample >> 3;
  let mask: number;
  if (pcm >= 0) {
    mask = 0xd5;
  } else {
    mask = 0x55;
    pcm = -pcm - 1;
  }
  let seg = 0;
  while (seg < 8 && pcm > ALAW_SEGMENT_ENDS[seg]!) seg++;
  if (seg >= 8) return 0x7f ^ mask;
  const aval = (seg << 4) | (seg < 2 ? (pcm >> 1) & 0x0f : (pcm >> seg) & 0x0f);
  return aval ^ mask;
}
