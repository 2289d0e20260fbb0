import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { wavHeader, wavLayout } from './codec/wav.ts';

/** 16 kHz, as the protocol and the pipeline. */
const RATE = 16_000;
/** Samples gathered per channel before they are appended to its file (2 s). */
const CHUNK_SAMPLES = RATE * 2;
/** Audio waiting for the disk per channel before new audio is dropped (about 30 s): never unbounded. */
const MAX_PENDING_BYTES = RATE * 2 * 30;

/**
 * One mono track streamed to a temporary file: samples are placed at a position on the call's
 * timeline (gaps are filled with silence; a write that would go back in time is appended at the
 * current end instead). Memory is one 2 s chunk plus what the disk has not taken yet (bounded).
 */
class TrackWriter {
  readonly file: string;
  #buf = new Int16Array(CHUNK_SAMPLES);
  #fill = 0;
  /** Samples written to the track so far (flushed or buffered). */
  length = 0;
  #chain: Promise<void> = Promise.resolve();
  #pendingBytes = 0;
  dropped = 0;
  #failed: Error | undefined;

  constructor(file: string) {
    this.file = file;
  }

  /** Writes `pcm` at sample `at` (or at the end, if `at` is already behind it). */
  write(pcm: Int16Array, at = this.length): void {
    if (at > this.length) this.#silence(at - this.length);
    for (let i = 0; i < pcm.length; ) {
      const n = Math.min(pcm.length - i, CHUNK_SAMPLES - this.#fill);
      this.#buf.set(pcm.subarray(i, i + n), this.#fill);
      this.#fill += n;
      i += n;
      this.length += n;
      if (this.#fill === CHUNK_SAMPLES) this.#flush();
    }
  }

  /** Pads the track with silence up to `samples`. */
  padTo(samples: number): void {
    if (samples > this.length) this.#silence(samples - this.length);
  }

  #silence(n: number): void {
    let left = n;
    while (left > 0) {
      const k = Math.min(left, CHUNK_SAMPLES - this.#fill);
      this.#buf.fill(0, this.#fill, this.#fill + k);
      this.#fill += k;
      left -= k;
      this.length += k;
      if (this.#fill === CHUNK_SAMPLES) this.#flush();
    }
  }

  #flush(): void {
    if (this.#fill === 0) return;
    const bytes = Buffer.from(this.#buf.buffer, 0, this.#fill * 2);
    this.#buf = new Int16Array(CHUNK_SAMPLES);
    this.#fill = 0;
    if (this.#pendingBytes + bytes.byteLength > MAX_PENDING_BYTES) {
      // The disk is not keeping up: losing audio is better than growing memory without limit.
      // Write silence of the same length later so the timeline stays right.
      this.dropped += bytes.byteLength / 2;
      bytes.fill(0);
    }
    this.#pendingBytes += bytes.byteLength;
    this.#chain = this.#chain.then(async () => {
      try {
        if (this.#failed === undefined) await fsp.appendFile(this.file, bytes);
      } catch (e) {
        this.#failed = e instanceof Error ? e : new Error(String(e));
      } finally {
        this.#pendingBytes -= bytes.byteLength;
      }
    });
  }

  /** Flushes everything; rejects when a write failed. */
  async finish(): Promise<void> {
    this.#flush();
    await this.#chain;
    if (this.#failed !== undefined) throw this.#failed;
  }
}

/**
 * Records a call as a 2-channel, 16 kHz, 16-bit WAV: the user on the left channel, the agent on
 * the right, both on the call's timeline (ms since the pipeline started). Each channel streams to
 * its own temporary file during the call; `finish()` interleaves them into the final WAV in
 * chunks, so memory stays bounded whatever the call's length.
 */
export class CallRecorder {
  readonly #dir: string;
  readonly #callId: string;
  readonly #user: TrackWriter;
  readonly #agent: TrackWriter;
  #finished = false;

  /** `dir` is DATA_DIR/recordings; created if needed. */
  constructor(dir: string, callId: string) {
    this.#dir = dir;
    this.#callId = callId;
    fs.mkdirSync(dir, { recursive: true });
    this.#user = new TrackWriter(path.join(dir, `${callId}.user.tmp`));
    this.#agent = new TrackWriter(path.join(dir, `${callId}.agent.tmp`));
  }

  /** The user's audio, appended in order (its position is the count of samples received). */
  user(pcm: Int16Array): void {
    if (!this.#finished) this.#user.write(pcm);
  }

  /** The agent's audio; `atMs` places the first frame of a reply on the timeline (later frames follow it). */
  agent(pcm: Int16Array, atMs?: number): void {
    if (this.#finished) return;
    this.#agent.write(pcm, atMs === undefined ? undefined : Math.round((atMs * RATE) / 1000));
  }

  /**
   * Writes the WAV (`<dir>/<call_id>.wav`, at least `durationMs` long) and removes the temporary
   * files. Returns the file's path, or null when nothing was recorded.
   */
  async finish(durationMs: number): Promise<string | null> {
    if (this.#finished) throw new Error('recorder already finished');
    this.#finished = true;
    const total = Math.max(this.#user.length, this.#agent.length, Math.round((durationMs * RATE) / 1000));
    this.#user.padTo(total);
    this.#agent.padTo(total);
    try {
      await Promise.all([this.#user.finish(), this.#agent.finish()]);
      if (total === 0) return null;
      const out = path.join(this.#dir, `${this.#callId}.wav`);
      const tmp = `${out}.tmp`;
      await interleaveFiles(this.#user.file, this.#agent.file, tmp, total);
      await fsp.rename(tmp, out);
      return out;
    } finally {
      await Promise.all([fsp.rm(this.#user.file, { force: true }), fsp.rm(this.#agent.file, { force: true })]);
    }
  }

  /** Drops the recording (e.g. the call never started); idempotent. */
  async discard(): Promise<void> {
    this.#finished = true;
    await Promise.allSettled([this.#user.finish(), this.#agent.finish()]);
    await Promise.all([fsp.rm(this.#user.file, { force: true }), fsp.rm(this.#agent.file, { force: true })]);
  }
}

/** Interleaves two mono 16-bit files of `samples` samples into a stereo WAV, 64 k samples at a time. */
async function interleaveFiles(left: string, right: string, out: string, samples: number): Promise<void> {
  const [l, r, o] = await Promise.all([openOrEmpty(left), openOrEmpty(right), fsp.open(out, 'w')]);
  try {
    await o.write(wavHeader(RATE, 2, samples * 4), 0, 44, 0);
    const step = 65_536;
    const lb = Buffer.alloc(step * 2);
    const rb = Buffer.alloc(step * 2);
    const ob = Buffer.alloc(step * 4);
    let pos = 44;
    for (let i = 0; i < samples; i += step) {
      const n = Math.min(step, samples - i);
      lb.fill(0, 0, n * 2);
      rb.fill(0, 0, n * 2);
      if (l) await l.read(lb, 0, n * 2, i * 2);
      if (r) await r.read(rb, 0, n * 2, i * 2);
      for (let k = 0; k < n; k++) {
        ob.writeInt16LE(lb.readInt16LE(k * 2), k * 4);
        ob.writeInt16LE(rb.readInt16LE(k * 2), k * 4 + 2);
      }
      await o.write(ob, 0, n * 4, pos);
      pos += n * 4;
    }
  } finally {
    await Promise.all([l?.close(), r?.close(), o.close()]);
  }
}

async function openOrEmpty(file: string): Promise<fsp.FileHandle | null> {
  try {
    return await fsp.open(file, 'r');
  } catch {
    return null;
  }
}

/**
 * Silences [startMs, endMs) of every channel of a 16-bit PCM WAV file in place, span by span,
 * without reading the whole file (PII redaction of recordings).
 */
export async function silenceWavSpans(file: string, spans: ReadonlyArray<{ startMs: number; endMs: number }>): Promise<void> {
  if (spans.length === 0) return;
  const fh = await fsp.open(file, 'r+');
  try {
    const head = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    const { size } = await fh.stat();
    const layout = wavLayout(head.subarray(0, bytesRead), size);
    const dataEnd = Math.min(size, layout.dataOffset + layout.dataBytes);
    const frameBytes = layout.channels * 2;
    const zeros = Buffer.alloc(65_536);
    for (const s of spans) {
      const from = layout.dataOffset + Math.max(0, Math.floor((s.startMs * layout.sampleRate) / 1000)) * frameBytes;
      const to = Math.min(dataEnd, layout.dataOffset + Math.ceil((s.endMs * layout.sampleRate) / 1000) * frameBytes);
      for (let p = from; p < to; p += zeros.length) await fh.write(zeros, 0, Math.min(zeros.length, to - p), p);
    }
  } finally {
    await fh.close();
  }
}
