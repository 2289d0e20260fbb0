import type { Readable } from 'node:stream';
import { WAV_HEADER_BYTES, wavHeader } from '../lib/wav.ts';

/**
 * Recordings are 16-bit at their call's own rate: 16 kHz (the media protocol's, Opus), or 8 kHz
 * for a telephone-band call (G.711, Twilio), whose WAV header then says 8000. This is the default.
 */
export const RECORDING_RATE = 16_000;
/** Channels of the final recording: the user (left) and the agent (right). */
const RECORDING_CHANNELS = 2;
/** Bytes per frame of the final recording: 2 channels x 16 bits. */
export const FRAME_BYTES = RECORDING_CHANNELS * 2;

/** A call's two tracks while it runs: 0 is the user (left channel), 1 the agent (right). */
export type Track = 0 | 1;

/** A span of the call's timeline, ms from the start of its recording. */
export interface TimeSpan {
  startMs: number;
  endMs: number;
}

/** Where a recording is being written while its call runs. */
export interface RecordingWriter {
  /**
   * Writes a piece of one track: 16-bit mono PCM placed at byte `offset` of the track (a gap
   * between pieces is silence). Rejects when the piece could not be stored.
   */
  writeChunk(track: Track, offset: number, bytes: Buffer): Promise<void>;
  /**
   * Makes the final recording, `samples` frames long at `rateHz` (the tracks' rate: the call's;
   * tracks shorter than that are padded with silence, longer ones cut), and frees the tracks.
   * Resolves to the call's `recording_path`, or null when `samples` is 0.
   */
  finish(samples: number, rateHz: number): Promise<string | null>;
  /** Drops what was written (e.g. the call never started). Idempotent. */
  discard(): Promise<void>;
}

/**
 * Where recordings live: local files (SQLite, one server) or chunks in PostgreSQL (any server can
 * serve any call's recording, and a server lost mid-call loses at most its last unwritten chunk).
 * A recording is a stereo 16-bit WAV at its call's rate (16 or 8 kHz) with the canonical 44-byte
 * header (lib/wav.ts): the user left, the agent right.
 * `recordingPath` is the call's `recording_path` column as `finish` returned it.
 */
export interface RecordingStore {
  /** Starts writing a call's recording. */
  open(callId: string): RecordingWriter;
  /** The recording's size in bytes, or null when it is not stored. */
  size(callId: string, recordingPath: string): Promise<number | null>;
  /** Bytes [start, end] (inclusive) of the recording, streamed. */
  read(callId: string, recordingPath: string, start: number, end: number): Readable;
  /** Silences `spans` on both channels in place (PII redaction). Rejects when it cannot. */
  silence(callId: string, recordingPath: string, spans: readonly TimeSpan[]): Promise<void>;
  /** Deletes the recording and anything left of its tracks. Idempotent. */
  delete(callId: string, recordingPath: string | null): Promise<void>;
  /**
   * Makes the final recording of a call whose server stopped without finishing it (from the tracks
   * stored so far, as long as the longest of them, at `rateHz`: the call's rate as its checkpoint
   * gave it), or finds the one already made. Resolves to the call's `recording_path`, or null
   * when nothing was stored.
   */
  recover(callId: string, rateHz?: number): Promise<string | null>;
}

/** Frames interleaved per step when a recording is assembled: 64 k (256 KiB of output). */
const ASSEMBLY_STEP = 65_536;

/**
 * Assembles a recording from its two tracks: the header, then `samples` frames, handed to `emit`
 * in order, 64 k frames at a time. `readTrack` fills `into` with `into.length` bytes of a track
 * from byte `offset` (it is zeroed beforehand: leave silence untouched). Memory: three buffers.
 */
export async function assembleRecording(
  samples: number,
  rateHz: number,
  readTrack: (track: Track, offset: number, into: Buffer) => Promise<void>,
  emit: (bytes: Buffer) => Promise<void>,
): Promise<void> {
  await emit(wavHeader(rateHz, RECORDING_CHANNELS, samples * FRAME_BYTES));
  const left = Buffer.alloc(ASSEMBLY_STEP * 2);
  const right = Buffer.alloc(ASSEMBLY_STEP * 2);
  for (let i = 0; i < samples; i += ASSEMBLY_STEP) {
    const n = Math.min(ASSEMBLY_STEP, samples - i);
    const l = left.subarray(0, n * 2).fill(0);
    const r = right.subarray(0, n * 2).fill(0);
    await readTrack(0, i * 2, l);
    await readTrack(1, i * 2, r);
    const out = Buffer.allocUnsafe(n * FRAME_BYTES);
    for (let k = 0; k < n; k++) {
      out.writeInt16LE(l.readInt16LE(k * 2), k * 4);
      out.writeInt16LE(r.readInt16LE(k * 2), k * 4 + 2);
    }
    await emit(out);
  }
}

/** The rate a recording's WAV header (its first WAV_HEADER_BYTES) states, Hz. */
export function recordingRate(header: Buffer): number {
  if (header.length < WAV_HEADER_BYTES) throw new Error('recording header missing');
  return header.readUInt32LE(24);
}

/** The byte ranges [from, to) of a recording of `size` bytes at `rateHz` that `spans` cover (whole frames). */
export function spanBytes(spans: readonly TimeSpan[], size: number, rateHz: number): Array<{ from: number; to: number }> {
  return spans
    .map((s) => ({
      from: WAV_HEADER_BYTES + Math.max(0, Math.floor((s.startMs * rateHz) / 1000)) * FRAME_BYTES,
      to: Math.min(size, WAV_HEADER_BYTES + Math.ceil((s.endMs * rateHz) / 1000) * FRAME_BYTES),
    }))
    .filter((r) => r.from < r.to);
}

/** The relative `recording_path` of a call's recording (both stores use the same). */
export function recordingPathFor(callId: string): string {
  return `recordings/${callId}.wav`;
}
