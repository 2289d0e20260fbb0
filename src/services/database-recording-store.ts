import { Readable } from 'node:stream';
import type { RecordingRepository } from '../storage/recording.repository.ts';
import type { Executor } from '../storage/store.ts';
import { WAV_HEADER_BYTES } from '../lib/wav.ts';
import { RECORDING_RATE, type RecordingStore, type RecordingWriter, type TimeSpan, assembleRecording, recordingPathFor, recordingRate, spanBytes } from './recording-store.ts';

/** The final WAV's channel in `recording_chunks` (0 and 1 are the tracks). */
const WAV_CHANNEL = 2;
/** Bytes per stored piece of a final WAV: 256 KiB (a 10-minute call is about 150 rows). */
const WAV_PIECE_BYTES = 256 * 1024;
/** Pieces fetched per query when a recording is streamed: 2 MiB. */
const READ_PIECES = 8;

/**
 * Recordings in the database (PostgreSQL): each track's pieces are stored as the call goes (the
 * call recorder writes one about every 2 s, off the media path), so a server lost mid-call loses
 * at most the piece being filled; `finish` assembles the WAV into 256 KiB pieces and deletes the
 * tracks in one transaction, and any server streams any byte range of it.
 */
export class DatabaseRecordingStore implements RecordingStore {
  readonly #repo: RecordingRepository;

  constructor(repo: RecordingRepository) {
    this.#repo = repo;
  }

  open(callId: string): RecordingWriter {
    let done = false;
    return {
      writeChunk: async (track, offset, bytes) => {
        if (!done) await this.#repo.put(callId, track, offset, bytes);
      },
      finish: async (samples, rateHz) => {
        done = true;
        if (samples === 0) {
          await this.#repo.delete(callId);
          return null;
        }
        return this.#assemble(callId, samples, rateHz);
      },
      discard: async () => {
        done = true;
        await this.#repo.delete(callId);
      },
    };
  }

  async size(callId: string): Promise<number | null> {
    return (await this.#repo.extents(callId)).get(WAV_CHANNEL) ?? null;
  }

  read(callId: string, _recordingPath: string, start: number, end: number): Readable {
    const repo = this.#repo;
    async function* pieces() {
      for (let position = start; position <= end; ) {
        const to = Math.min(end + 1, position + READ_PIECES * WAV_PIECE_BYTES);
        const chunks = await repo.overlapping(callId, WAV_CHANNEL, position, to);
        if (chunks.length === 0) throw new Error('recording pieces missing');
        for (const chunk of chunks) {
          const from = Math.max(position, chunk.byteOffset);
          const until = Math.min(to, chunk.byteOffset + chunk.bytes.length);
          if (from !== position) throw new Error('recording pieces missing');
          yield chunk.bytes.subarray(from - chunk.byteOffset, until - chunk.byteOffset);
          position = until;
        }
        if (position < to) throw new Error('recording pieces missing');
      }
    }
    return Readable.from(pieces(), { objectMode: false });
  }

  async silence(callId: string, _recordingPath: string, spans: readonly TimeSpan[]): Promise<void> {
    const size = await this.size(callId);
    if (size === null) throw new Error('no recording to silence');
    const [first] = await this.#repo.overlapping(callId, WAV_CHANNEL, 0, WAV_HEADER_BYTES);
    const rateHz = recordingRate(Buffer.from(first?.bytes ?? []));
    await this.#repo.transaction(async (tx) => {
      for (const { from, to } of spanBytes(spans, size, rateHz)) {
        for (const chunk of await this.#repo.overlapping(callId, WAV_CHANNEL, from, to, tx)) {
          const bytes = Buffer.from(chunk.bytes);
          bytes.fill(0, Math.max(0, from - chunk.byteOffset), Math.min(bytes.length, to - chunk.byteOffset));
          await this.#repo.put(callId, WAV_CHANNEL, chunk.byteOffset, bytes, tx);
        }
      }
    });
  }

  async delete(callId: string): Promise<void> {
    await this.#repo.delete(callId);
  }

  async recover(callId: string, rateHz = RECORDING_RATE): Promise<string | null> {
    const extents = await this.#repo.extents(callId);
    if (extents.has(WAV_CHANNEL)) return recordingPathFor(callId);
    const samples = Math.floor(Math.max(extents.get(0) ?? 0, extents.get(1) ?? 0) / 2);
    if (samples === 0) return null;
    return this.#assemble(callId, samples, rateHz);
  }

  /** Writes the WAV from the tracks and deletes them, in one transaction. */
  async #assemble(callId: string, samples: number, rateHz: number): Promise<string> {
    await this.#repo.transaction(async (tx) => {
      let piece = Buffer.alloc(WAV_PIECE_BYTES);
      let fill = 0;
      let pieceOffset = 0;
      const flush = async () => {
        if (fill === 0) return;
        await this.#repo.put(callId, WAV_CHANNEL, pieceOffset, piece.subarray(0, fill), tx);
        pieceOffset += fill;
        piece = Buffer.alloc(WAV_PIECE_BYTES);
        fill = 0;
      };
      await assembleRecording(
        samples,
        rateHz,
        (track, offset, into) => this.#readTrack(tx, callId, track, offset, into),
        async (bytes) => {
          for (let i = 0; i < bytes.length; ) {
            const n = Math.min(bytes.length - i, WAV_PIECE_BYTES - fill);
            bytes.copy(piece, fill, i, i + n);
            fill += n;
            i += n;
            if (fill === WAV_PIECE_BYTES) await flush();
          }
        },
      );
      await flush();
      await this.#repo.delete(callId, [0, 1], tx);
    });
    return recordingPathFor(callId);
  }

  async #readTrack(tx: Executor, callId: string, track: number, offset: number, into: Buffer): Promise<void> {
    for (const chunk of await this.#repo.overlapping(callId, track, offset, offset + into.length, tx)) {
      const from = Math.max(offset, chunk.byteOffset);
      const to = Math.min(offset + into.length, chunk.byteOffset + chunk.bytes.length);
      chunk.bytes.copy(into, from - offset, from - chunk.byteOffset, to - chunk.byteOffset);
    }
  }
}
