import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { wavHeader, wavLayout } from './codec/wav.ts';

/** 16 kHz, as the protocol and the pipeline. */
const RATE = 16_000;
/** Samples gathered per channel before they are written to its file (2 s). */
const CHUNK_SAMPLES = RATE * 2;
/** Audio waiting for the disk per channel, bytes (about 30 s); beyond it new chunks are dropped, not queued. */
const MAX_PENDING_BYTES = RATE * 2 * 30;
/** A recording is never longer than the call's duration plus this, ms. */
export const MAX_RECORDING_OVERRUN_MS = 1_000;

/**
 * One mono track streamed to a temporary file: samples are placed at a position on the call's
 * timeline (a write that would go back in time is appended at the current end instead). Each 2 s
 * chunk is written at its own offset, so silence is a gap the file never holds (it reads back as
 * zeros), and a chunk the disk has no room for in time is dropped, not queued: it becomes
 * silence and the timeline stays right. Memory: one chunk being filled plus at most
 * MAX_PENDING_BYTES waiting for the disk, whatever happens.
 */
class TrackWriter {
  readonly file: string;
  #buf = new Int16Array(CHUNK_SAMPLES);
  #fill = 0;
  /** Timeline position of #buf[0], samples. */
  #bufAt = 0;
  /** Samples on the track so far (written, buffered, or skipped as silence). */
  length = 0;
  #handle: Promise<fsp.FileHandle> | undefined;
  #chain: Promise<void> = Promise.resolve();
  #pendingBytes = 0;
  /** Samples dropped because the disk was behind (silence in their place). */
  dropped = 0;
  #failed: Error | undefined;

  constructor(file: string) {
    this.file = file;
  }

  /** Writes `pcm` at sample `at` (or at the end, if `at` is already behind it). */
  write(pcm: Int16Array, at = this.length): void {
    if (at > this.length) this.#skip(at - this.length);
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
    if (samples > this.length) this.#skip(samples - this.length);
  }

  /** `n` samples of silence: nothing to write, the next chunk starts after them. */
  #skip(n: number): void {
    this.#flush();
    this.length += n;
    this.#bufAt = this.length;
  }

  #flush(): void {
    if (this.#fill === 0) return;
    const offset = this.#bufAt * 2;
    const byteLength = this.#fill * 2;
    this.#bufAt += this.#fill;
    this.#fill = 0;
    if (this.#pendingBytes + byteLength > MAX_PENDING_BYTES) {
      // The disk is not keeping up: losing audio is better than growing memory without limit.
      // The chunk becomes silence (a gap in the file) and its buffer is filled again.
      this.dropped += byteLength / 2;
      return;
    }
    const bytes = Buffer.from(this.#buf.buffer, 0, byteLength);
    this.#buf = new Int16Array(CHUNK_SAMPLES);
    this.#pendingBytes += byteLength;
    this.#chain = this.#chain.then(async () => {
      try {
        if (this.#failed === undefined) await (await this.#open()).write(bytes, 0, bytes.byteLength, offset);
      } catch (e) {
        this.#failed = e instanceof Error ? e : new Error(String(e));
      } finally {
        this.#pendingBytes -= bytes.byteLength;
      }
    });
  }

  #open(): Promise<fsp.FileHandle> {
    this.#handle ??= fsp.open(this.file, 'w');
    return this.#handle;
  }

  /** Flushes everything and closes the file; rejects when a write failed. */
  async finish(): Promise<void> {
    this.#flush();
    await this.#chain;
    await (await this.#handle?.catch(() => undefined))?.close();
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

  /**
   * The user's audio, appended in order: its position is the count of samples the transport
   * admitted, which its inbound limits keep within the call's time plus a 1 s burst.
   */
  user(pcm: Int16Array): void {
    if (!this.#finished) this.#user.write(pcm);
  }

  /** The agent's audio; `atMs` places the first frame of a reply on the timeline (later frames follow it). */
  agent(pcm: Int16Array, atMs?: number): void {
    if (this.#finished) return;
    this.#agent.write(pcm, atMs === undefined ? undefined : Math.round((atMs * RATE) / 1000));
  }

  /**
   * Writes the WAV (`<dir>/<call_id>.wav`) and removes the temporary files. The WAV is at least
   * `durationMs` (the call's media time) long and never longer than `durationMs` +
   * MAX_RECORDING_OVERRUN_MS, whatever the tracks hold. Returns the file's path, or null when
   * nothing was recorded.
   */
  async finish(durationMs: number): Promise<string | null> {
    if (this.#finished) throw new Error('recorder already finished');
    this.#finished = true;
    const samplesOf = (ms: number) => Math.round((ms * RATE) / 1000);
    const total = Math.min(Math.max(this.#user.length, this.#agent.length, samplesOf(durationMs)), samplesOf(durationMs + MAX_RECORDING_OVERRUN_MS));
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

/**
 * Turns what a recorder of `callId` left in `dir` (DATA_DIR/recordings) when its process died —
 * the two temporary track files, written every 2 s — into the call's WAV, as long as the longer
 * track, and removes them. Returns the WAV's path, or null when no track file is there (nothing
 * was recorded, or the call ran on another server's disk).
 */
export async function recoverRecording(dir: string, callId: string): Promise<string | null> {
  const user = path.join(dir, `${callId}.user.tmp`);
  const agent = path.join(dir, `${callId}.agent.tmp`);
  const sizes = await Promise.all([user, agent].map((file) => fsp.stat(file).then((stat) => stat.size, () => -1)));
  if (sizes.every((size) => size < 0)) return null;
  try {
    const total = Math.floor(Math.max(0, ...sizes) / 2);
    if (total === 0) return null;
    const out = path.join(dir, `${callId}.wav`);
    const tmp = `${out}.tmp`;
    await interleaveFiles(user, agent, tmp, total);
    await fsp.rename(tmp, out);
    return out;
  } finally {
    await Promise.all([fsp.rm(user, { force: true }), fsp.rm(agent, { force: true })]);
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
