/**
 * The media format of the voice pipeline: 16-bit little-endian mono PCM in 20 ms frames, at the
 * call's own rate: 16 kHz (320 samples, 640 bytes; what the WebSocket transport carries) or, on a
 * telephone-band call (G.711 over SIP, a Twilio stream), 8 kHz (160 samples), which nothing on
 * the way resamples to 16 kHz (docs/telephony.md, "What runs at which rate").
 */
export const SAMPLE_RATE_HZ = 16_000;
/** The rates a call's pipeline runs at, Hz: the telephone band or wideband. */
export type CallSampleRate = 8000 | 16000;
/** Duration of one frame, milliseconds. */
export const FRAME_MS = 20;
/** Samples per frame at 16 kHz (320). */
export const FRAME_SAMPLES = (SAMPLE_RATE_HZ * FRAME_MS) / 1000;
/** Bytes per frame at 16 kHz (640). */
export const FRAME_BYTES = FRAME_SAMPLES * 2;

/** Samples in one 20 ms frame at `rateHz` (160 at 8 kHz, 320 at 16 kHz). */
export function frameSamples(rateHz: number): number {
  return (rateHz * FRAME_MS) / 1000;
}

/** One 20 ms frame of user audio, stamped with its position on the call's media timeline. */
export interface AudioFrame {
  /** Exactly one 20 ms frame of samples at the call's rate. */
  readonly pcm: Int16Array;
  /** Media time of the frame's first sample, ms since the pipeline started. */
  readonly offsetMs: number;
  /**
   * When the frame reached the server, on the pipeline's clock (absent: at offsetMs). The media
   * timeline drifts from that clock (a client that stalls sends less audio than time went by, one
   * that catches up sends more), and the agent's replies are placed on the clock.
   */
  readonly receivedMs?: number;
}

/** Views little-endian 16-bit bytes as samples (copies when unaligned). */
export function bytesToSamples(bytes: Uint8Array): Int16Array {
  const n = bytes.byteLength >> 1;
  if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, n);
  const copy = new Uint8Array(n * 2);
  copy.set(bytes.subarray(0, n * 2));
  return new Int16Array(copy.buffer);
}

/** Views samples as little-endian bytes, without copying. */
export function samplesToBytes(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Duration in ms of a mono sample count at `rateHz` (default 16 kHz). */
export function samplesToMs(samples: number, rateHz: number = SAMPLE_RATE_HZ): number {
  return (samples * 1000) / rateHz;
}

/**
 * Cuts arbitrary-length PCM into exact 20 ms frames, carrying the remainder to the next call.
 * Transports deliver chunks of any size; stages see only whole frames.
 */
export class Framer {
  #rest = new Int16Array(0);
  readonly #frame: number;

  /** `frameSamples`: samples per frame (default FRAME_SAMPLES, 20 ms at 16 kHz). */
  constructor(frameSamples: number = FRAME_SAMPLES) {
    this.#frame = frameSamples;
  }

  /** Samples held back until the next frame is whole. */
  get pendingSamples(): number {
    return this.#rest.length;
  }

  /** Returns the whole frames completed by `pcm` (each a fresh array of the frame's samples). */
  push(pcm: Int16Array): Int16Array[] {
    const all = new Int16Array(this.#rest.length + pcm.length);
    all.set(this.#rest, 0);
    all.set(pcm, this.#rest.length);
    const frames: Int16Array[] = [];
    let i = 0;
    for (; i + this.#frame <= all.length; i += this.#frame) frames.push(all.slice(i, i + this.#frame));
    this.#rest = all.slice(i);
    return frames;
  }

  /** Returns the remainder zero-padded to a whole frame, or nothing if empty. */
  flush(): Int16Array[] {
    if (this.#rest.length === 0) return [];
    const f = new Int16Array(this.#frame);
    f.set(this.#rest);
    this.#rest = new Int16Array(0);
    return [f];
  }
}

/** Root-mean-square level of a frame, 0..32768. */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / pcm.length);
}
