/**
 * The media format of the voice pipeline: 16 kHz, 16-bit little-endian, mono PCM in 20 ms frames
 * (320 samples, 640 bytes). This is also what the WebSocket transport carries.
 */
export const SAMPLE_RATE_HZ = 16_000;
/** Duration of one frame, milliseconds. */
export const FRAME_MS = 20;
/** Samples per frame (320). */
export const FRAME_SAMPLES = (SAMPLE_RATE_HZ * FRAME_MS) / 1000;
/** Bytes per frame (640). */
export const FRAME_BYTES = FRAME_SAMPLES * 2;

/** One 20 ms frame of user audio, stamped with its position on the call's media timeline. */
export interface AudioFrame {
  /** Exactly FRAME_SAMPLES samples. */
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

/** Duration in ms of a mono 16 kHz sample count. */
export function samplesToMs(samples: number): number {
  return (samples * 1000) / SAMPLE_RATE_HZ;
}

/**
 * Cuts arbitrary-length PCM into exact 20 ms frames, carrying the remainder to the next call.
 * Transports deliver chunks of any size; stages see only whole frames.
 */
export class Framer {
  #rest = new Int16Array(0);

  /** Samples held back until the next frame is whole. */
  get pendingSamples(): number {
    return this.#rest.length;
  }

  /** Returns the whole frames completed by `pcm` (each a fresh FRAME_SAMPLES array). */
  push(pcm: Int16Array): Int16Array[] {
    const all = new Int16Array(this.#rest.length + pcm.length);
    all.set(this.#rest, 0);
    all.set(pcm, this.#rest.length);
    const frames: Int16Array[] = [];
    let i = 0;
    for (; i + FRAME_SAMPLES <= all.length; i += FRAME_SAMPLES) frames.push(all.slice(i, i + FRAME_SAMPLES));
    this.#rest = all.slice(i);
    return frames;
  }

  /** Returns the remainder zero-padded to a whole frame, or nothing if empty. */
  flush(): Int16Array[] {
    if (this.#rest.length === 0) return [];
    const f = new Int16Array(FRAME_SAMPLES);
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
