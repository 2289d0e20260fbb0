/**
 * G.711 μ-law (ITU-T G.711, the North American telephone codec): 8-bit samples, 8 kHz, what
 * Twilio's media streams and most SIP trunks carry. Encoding and decoding are table lookups; the
 * codec is stateless, so any chunk can be converted alone.
 */

/** Added to the magnitude before the segment search (G.711's bias, 0x84). */
const BIAS = 0x84;
/** Largest magnitude that still fits after the bias. */
const CLIP = 32_635;

/** The 16-bit linear value of each of the 256 μ-law bytes. */
const DECODE_TABLE = (() => {
  const table = new Int16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    const u = ~byte & 0xff;
    const exponent = (u >> 4) & 0x07;
    const magnitude = (((u & 0x0f) << 3) + BIAS) << exponent;
    table[byte] = u & 0x80 ? BIAS - magnitude : magnitude - BIAS;
  }
  return table;
})();

/** For a biased magnitude's top byte (>> 7), the segment (exponent) it falls in. */
const SEGMENT_TABLE = (() => {
  const table = new Uint8Array(256);
  for (let i = 0; i < 256; i += 1) table[i] = i === 0 ? 0 : Math.floor(Math.log2(i));
  return table;
})();

/** One 16-bit linear sample as a μ-law byte. */
export function encodeMulawSample(sample: number): number {
  let s = sample | 0;
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  const exponent = SEGMENT_TABLE[(s >> 7) & 0xff]!;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** 16-bit linear PCM as μ-law bytes, one per sample. */
export function encodeMulaw(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i += 1) out[i] = encodeMulawSample(pcm[i]!);
  return out;
}

/** μ-law bytes as 16-bit linear PCM, one sample per byte. */
export function decodeMulaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i += 1) out[i] = DECODE_TABLE[bytes[i]!]!;
  return out;
}
