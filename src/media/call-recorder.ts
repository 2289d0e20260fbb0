import type { RecordingWriter, Track } from '../services/recording-store.ts';

/** Samples gathered per channel before they are written to the store (2 s at 16 kHz, 4 s at 8 kHz). */
const CHUNK_SAMPLES = 32_000;
/** Audio waiting for the store per channel, bytes (30 s at 16 kHz); beyond it new chunks are dropped, not queued. */
const MAX_PENDING_BYTES = 16_000 * 2 * 30;
/** A recording is never longer than the call's duration plus this, ms. */
export const MAX_RECORDING_OVERRUN_MS = 1_000;

/**
 * One mono track streamed to the recording store: samples are placed at a position on the call's
 * timeline (a write that would go back in time is appended at the current end instead). Each 2 s
 * chunk is written at its own offset, so silence is a gap the store never holds (it reads back as
 * zeros), and a chunk the store has no room for in time is dropped, not queued: it becomes
 * silence and the timeline stays right. Memory: one chunk being filled plus at most
 * MAX_PENDING_BYTES waiting for the store, whatever happens.
 */
class TrackWriter {
  readonly #track: Track;
  readonly #writer: RecordingWriter;
  #buf = new Int16Array(CHUNK_SAMPLES);
  #fill = 0;
  /** Timeline position of #buf[0], samples. */
  #bufAt = 0;
  /** Samples on the track so far (written, buffered, or skipped as silence). */
  length = 0;
  #chain: Promise<void> = Promise.resolve();
  #pendingBytes = 0;
  #failed: Error | undefined;

  constructor(writer: RecordingWriter, track: Track) {
    this.#writer = writer;
    this.#track = track;
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
      // The store is not keeping up: losing audio is better than growing memory without limit.
      // The chunk becomes silence (a gap in the file) and its buffer is filled again.
      return;
    }
    const bytes = Buffer.from(this.#buf.buffer, 0, byteLength);
    this.#buf = new Int16Array(CHUNK_SAMPLES);
    this.#pendingBytes += byteLength;
    this.#chain = this.#chain.then(async () => {
      try {
        if (this.#failed === undefined) await this.#writer.writeChunk(this.#track, offset, bytes);
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
 * the recording store in 2 s chunks during the call (files on SQLite, rows on PostgreSQL);
 * `finish()` has the store assemble the WAV, so memory stays bounded whatever the call's length.
 */
export class CallRecorder {
  readonly #writer: RecordingWriter;
  readonly #user: TrackWriter;
  readonly #agent: TrackWriter;
  readonly #rate: number;
  #finished = false;

  /**
   * `writer`: the recording store's writer for this call (RecordingStore.open); `rateHz`: the
   * call's audio rate (its endpoint's), at which the tracks are kept and the WAV is written.
   */
  constructor(writer: RecordingWriter, rateHz: 8000 | 16000 = 16_000) {
    this.#writer = writer;
    this.#rate = rateHz;
    this.#user = new TrackWriter(writer, 0);
    this.#agent = new TrackWriter(writer, 1);
  }

  /**
   * The user's audio, in order, at `atMs` on the timeline (the pipeline's position for it: the
   * samples admitted so far, plus the gaps the caller never sent). The transport's inbound limits
   * keep it within the call's time plus a 1 s burst.
   */
  user(pcm: Int16Array, atMs: number): void {
    if (!this.#finished) this.#user.write(pcm, Math.round((atMs * this.#rate) / 1000));
  }

  /** The agent's audio; `atMs` places the first frame of a reply on the timeline (later frames follow it). */
  agent(pcm: Int16Array, atMs?: number): void {
    if (this.#finished) return;
    this.#agent.write(pcm, atMs === undefined ? undefined : Math.round((atMs * this.#rate) / 1000));
  }

  /**
   * Has the store make the recording and returns its `recording_path` (null when nothing was
   * recorded). The WAV is at least `durationMs` (the call's media time) long and never longer than
   * `durationMs` + MAX_RECORDING_OVERRUN_MS, whatever the tracks hold.
   */
  async finish(durationMs: number): Promise<string | null> {
    if (this.#finished) throw new Error('recorder already finished');
    this.#finished = true;
    const samplesOf = (ms: number) => Math.round((ms * this.#rate) / 1000);
    const total = Math.min(Math.max(this.#user.length, this.#agent.length, samplesOf(durationMs)), samplesOf(durationMs + MAX_RECORDING_OVERRUN_MS));
    this.#user.padTo(total);
    this.#agent.padTo(total);
    try {
      await Promise.all([this.#user.finish(), this.#agent.finish()]);
    } catch (error) {
      await this.#writer.discard();
      throw error;
    }
    return this.#writer.finish(total, this.#rate);
  }

  /** Drops the recording (e.g. the call never started); idempotent. */
  async discard(): Promise<void> {
    this.#finished = true;
    await Promise.allSettled([this.#user.finish(), this.#agent.finish()]);
    await this.#writer.discard();
  }
}
