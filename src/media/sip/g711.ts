/**
 * G.711 (ITU-T G.711): μ-law and A-law, 8-bit companded samples of 8 kHz telephone audio, each to
 * and from 16-bit linear PCM. Table-driven decoding; encoding by the segment search of the
 * reference implementation.
 */

/** The RTP static payload types of G.711 (RFC 3551 table 4). */
export const PCMU_PAYLOAD_TYPE = 0;
export const PCMA_PAYLOAD_TYPE = 8;

export type G711Codec = 'pcmu' | 'pcma';

const MULAW_DECODE = new Int16Array(256);
const ALAW_DECODE = new Int16Array(256);
for (let i = 0; i < 256; i++) {
  const u = ~i & 0xff;
  const t = (((u & 0x0f) << 3) + 0x84) << ((u & 0x70) >> 4);
  MULAW_DECODE[i] = u & 0x80 ? 0x84 - t : t - 0x84;
  const a = i ^ 0x55;
  let v = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) v += 8;
  else if (seg === 1) v += 0x108;
  else v = (v + 0x108) << (seg - 1);
  ALAW_DECODE[i] = a & 0x80 ? v : -v;
}

export function decodeG711(codec: G711Codec, bytes: Uint8Array): Int16Array {
  const table = codec === 'pcmu' ? MULAW_DECODE : ALAW_DECODE;
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i] as number] as number;
  return out;
}

export function encodeG711(codec: G711Codec, pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = codec === 'pcmu' ? linearToMulaw(pcm[i] as number) : linearToAlaw(pcm[i] as number);
  return out;
}

const MULAW_BIAS = 0x84;
const MULAW_CLIP = 32_635;

function linearToMulaw(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let magnitude = Math.min(Math.abs(sample), MULAW_CLIP) + MULAW_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  magnitude = ~(sign | (exponent << 4) | mantissa);
  return magnitude & 0xff;
}

function linearToAlaw(sample: number): number {
  let pcm = sample >> 3;
  let mask: number;
  if (pcm >= 0) {
    mask = 0xd5;
  } else {
    mask = 0x55;
    pcm = -pcm - 1;
  }
  const ends = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff];
  let seg = 0;
  while (seg < 8 && pcm > (ends[seg] as number)) seg++;
  if (seg >= 8) return 0x7f ^ mask;
  const aval = (seg << 4) | (seg < 2 ? (pcm >> 1) & 0x0f : (pcm >> seg) & 0x0f);
  return aval ^ mask;
}
