import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { WAV_HEADER_BYTES } from '../lib/wav.ts';
import {
  type RecordingStore,
  type RecordingWriter,
  type TimeSpan,
  type Track,
  RECORDING_RATE,
  assembleRecording,
  recordingPathFor,
  recordingRate,
  spanBytes,
} from './recording-store.ts';

const TRACK_SUFFIX = ['user', 'agent'] as const;

/**
 * Recordings as files under DATA_DIR (the embedded store, one server): each track streams to
 * `recordings/<call_id>.<user|agent>.tmp` while the call runs, and `finish` interleaves them into
 * `recordings/<call_id>.wav`, which `recording_path` names relative to DATA_DIR.
 */
export class FileRecordingStore implements RecordingStore {
  readonly #dataDir: string;
  readonly #dir: string;

  constructor(dataDir: string) {
    this.#dataDir = path.resolve(dataDir);
    this.#dir = path.join(this.#dataDir, 'recordings');
  }

  open(callId: string): RecordingWriter {
    fs.mkdirSync(this.#dir, { recursive: true });
    // Each piece opens, writes at its offset and closes (one every 2 s per track): nothing stays
    // open between pieces, and what was written is on disk for recover() if the process dies.
    return {
      writeChunk: async (track, offset, bytes) => {
        const fh = await fsp.open(this.#trackFile(callId, track), fs.constants.O_WRONLY | fs.constants.O_CREAT);
        try {
          await fh.write(bytes, 0, bytes.byteLength, offset);
        } finally {
          await fh.close();
        }
      },
      finish: async (samples, rateHz) => {
        try {
          return samples === 0 ? null : await this.#assemble(callId, samples, rateHz);
        } finally {
          await this.#removeTracks(callId);
        }
      },
      discard: () => this.#removeTracks(callId),
    };
  }

  async size(_callId: string, recordingPath: string): Promise<number | null> {
    const file = this.#resolve(recordingPath);
    if (!file) return null;
    try {
      return (await fsp.stat(file)).size;
    } catch {
      return null;
    }
  }

  read(_callId: string, recordingPath: string, start: number, end: number): Readable {
    const file = this.#resolve(recordingPath);
    if (!file) throw new Error('recording path outside the data directory');
    return fs.createReadStream(file, { start, end });
  }

  async silence(_callId: string, recordingPath: string, spans: readonly TimeSpan[]): Promise<void> {
    if (spans.length === 0) return;
    const file = this.#resolve(recordingPath);
    if (!file) throw new Error('recording path outside the data directory');
    const fh = await fsp.open(file, 'r+');
    try {
      const zeros = Buffer.alloc(65_536);
      const header = Buffer.alloc(WAV_HEADER_BYTES);
      await fh.read(header, 0, WAV_HEADER_BYTES, 0);
      for (const { from, to } of spanBytes(spans, (await fh.stat()).size, recordingRate(header))) {
        for (let p = from; p < to; p += zeros.length) await fh.write(zeros, 0, Math.min(zeros.length, to - p), p);
      }
    } finally {
      await fh.close();
    }
  }

  async delete(callId: string, recordingPath: string | null): Promise<void> {
    const file = recordingPath ? this.#resolve(recordingPath) : null;
    await Promise.all([file ? fsp.rm(file, { force: true }) : undefined, this.#removeTracks(callId)]);
  }

  async recover(callId: string, rateHz = RECORDING_RATE): Promise<string | null> {
    const finished = recordingPathFor(callId);
    if ((await this.size(callId, finished)) !== null) return finished;
    const sizes = await Promise.all([0, 1].map((track) => fsp.stat(this.#trackFile(callId, track as Track)).then((s) => s.size, () => 0)));
    const samples = Math.floor(Math.max(...sizes) / 2);
    try {
      return samples === 0 ? null : await this.#assemble(callId, samples, rateHz);
    } finally {
      await this.#removeTracks(callId);
    }
  }

  async #assemble(callId: string, samples: number, rateHz: number): Promise<string> {
    const relative = recordingPathFor(callId);
    const out = path.join(this.#dataDir, relative);
    const tmp = `${out}.tmp`;
    const tracks = await Promise.all([0, 1].map((track) => fsp.open(this.#trackFile(callId, track as Track), 'r').catch(() => null)));
    const output = await fsp.open(tmp, 'w');
    try {
      let position = 0;
      await assembleRecording(
        samples,
        rateHz,
        async (track, offset, into) => {
          await tracks[track]?.read(into, 0, into.length, offset);
        },
        async (bytes) => {
          await output.write(bytes, 0, bytes.length, position);
          position += bytes.length;
        },
      );
    } finally {
      await Promise.all([...tracks.map((t) => t?.close()), output.close()]);
    }
    await fsp.rename(tmp, out);
    return relative;
  }

  #trackFile(callId: string, track: Track): string {
    return path.join(this.#dir, `${callId}.${TRACK_SUFFIX[track]}.tmp`);
  }

  async #removeTracks(callId: string): Promise<void> {
    await Promise.all([fsp.rm(this.#trackFile(callId, 0), { force: true }), fsp.rm(this.#trackFile(callId, 1), { force: true })]);
  }

  /** The file a `recording_path` names, only inside DATA_DIR. */
  #resolve(recordingPath: string): string | null {
    const file = path.resolve(this.#dataDir, recordingPath);
    return file.startsWith(this.#dataDir + path.sep) ? file : null;
  }
}
