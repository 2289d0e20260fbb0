/**
 * PCM helpers shared by the SDK's AudioWorklets and unit-tested in Node: conversion between
 * Float32 samples and 16-bit little-endian PCM, and a streaming band-limited resampler.
 */

/** Converts Float32 samples in [-1, 1] to 16-bit signed PCM (clipped). */
export function floatToPcm16(input: Float32Array): Int16Array {
  const out = new Int16Array(input.length);
  for (let i = 0; i < input.length; i++) {
    const s = Math.max(-1, Math.min(1, input[i]!));
    out[i] = s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
  }
  return out;
}

/** Converts 16-bit signed PCM to Float32 samples in [-1, 1). */
export function pcm16ToFloat(input: Int16Array): Float32Array {
  const out = new Float32Array(input.length);
  for (let i = 0; i < input.length; i++) out[i] = input[i]! / 0x8000;
  return out;
}

/**
 * Reads 16-bit little-endian PCM from a binary message. Copies, so an odd trailing byte or an
 * unaligned view is handled; the protocol says a message is a whole number of samples.
 */
export function pcm16FromBytes(bytes: ArrayBuffer): Int16Array {
  const view = new DataView(bytes);
  const out = new Int16Array(Math.floor(bytes.byteLength / 2));
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Writes 16-bit little-endian PCM into a new ArrayBuffer (the wire format). */
export function pcm16ToBytes(samples: Int16Array): ArrayBuffer {
  const buffer = new ArrayBuffer(samples.length * 2);
  const view = new DataView(buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
  return buffer;
}

/**
 * A streaming resampler: windowed-sinc interpolation (Blackman window) with the cut-off at the
 * lower of the two Nyquist frequencies, so downsampling 48 kHz microphone audio to 16 kHz does not
 * fold the 8-24 kHz band back into speech. State is kept between calls, so a stream cut into
 * 128-sample render quanta comes out the same as one long buffer. Delay: `halfTaps` output samples.
 */
export class StreamResampler {
  readonly inRate: number;
  readonly outRate: number;
  readonly #step: number;
  readonly #cutoff: number;
  readonly #half: number;
  /** Pending input, starting `#half` zeros before the first real sample. */
  #buffer: Float32Array;
  #length: number;
  /** Position of the next output sample in `#buffer` (input samples, fractional). */
  #pos: number;

  /**
   * @param inRate input sample rate (Hz)
   * @param outRate output sample rate (Hz)
   * @param halfTaps kernel half-width in units of the lower rate's samples (default 8)
   */
  constructor(inRate: number, outRate: number, halfTaps = 8) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError('sample rates must be positive');
    this.inRate = inRate;
    this.outRate = outRate;
    this.#step = inRate / outRate;
    this.#cutoff = Math.min(1, outRate / inRate);
    this.#half = Math.ceil(halfTaps / this.#cutoff);
    this.#buffer = new Float32Array(Math.max(1024, this.#half * 4));
    this.#length = this.#half;
    this.#pos = this.#half;
  }

  /** Drops all state (e.g. after a barge-in clear). */
  reset(): void {
    this.#buffer.fill(0);
    this.#length = this.#half;
    this.#pos = this.#half;
  }

  /** Resamples the next chunk of the stream; returns the output samples now computable. */
  process(input: Float32Array): Float32Array {
    if (this.inRate === this.outRate) return input.slice();
    this.#append(input);
    const half = this.#half;
    const cutoff = this.#cutoff;
    const available = Math.max(0, Math.floor((this.#length - half - 1 - this.#pos) / this.#step) + 1);
    const out = new Float32Array(available);
    const buffer = this.#buffer;
    let pos = this.#pos;
    for (let n = 0; n < available; n++) {
      const centre = Math.floor(pos);
      let acc = 0;
      let norm = 0;
      for (let k = centre - half + 1; k <= centre + half; k++) {
        const t = pos - k;
        const w = blackman(t / half);
        const x = cutoff * t;
        const h = (x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x)) * w;
        acc += buffer[k]! * h;
        norm += h;
      }
      // Normalising by the kernel sum keeps DC gain at exactly 1 whatever the fractional phase.
      out[n] = norm === 0 ? 0 : acc / norm;
      pos += this.#step;
    }
    this.#pos = pos;
    this.#compact();
    return out;
  }

  #append(input: Float32Array): void {
    const needed = this.#length + input.length;
    if (needed > this.#buffer.length) {
      const grown = new Float32Array(Math.max(needed, this.#buffer.length * 2));
      grown.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = grown;
    }
    this.#buffer.set(input, this.#length);
    this.#length = needed;
  }

  /** Keeps only the history the next output still needs, so the buffer stays bounded. */
  #compact(): void {
    const keepFrom = Math.floor(this.#pos) - this.#half + 1;
    if (keepFrom <= 0) return;
    this.#buffer.copyWithin(0, keepFrom, this.#length);
    this.#length -= keepFrom;
    this.#pos -= keepFrom;
  }
}

function blackman(t: number): number {
  // t in [-1, 1]; zero outside.
  if (t <= -1 || t >= 1) return 0;
  const x = (t + 1) / 2;
  return 0.42 - 0.5 * Math.cos(2 * Math.PI * x) + 0.08 * Math.cos(4 * Math.PI * x);
}

/** Root-mean-square level of a block of samples, in [0, 1]. */
export function rms(samples: Float32Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / samples.length);
}
