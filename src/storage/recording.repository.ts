import { sql } from 'kysely';
import type { Dialect, Executor, Store } from './store.ts';

/** A stored piece of a recording. */
export interface RecordingChunk {
  byteOffset: number;
  bytes: Buffer;
}

/** Pieces of recordings (see migration 0009_recordings): the tracks while a call runs, then its WAV. */
export class RecordingRepository {
  readonly #store: Store;
  readonly #db: Executor;
  readonly #dialect: Dialect;

  constructor(store: Store) {
    this.#store = store;
    this.#db = store.db;
    this.#dialect = store.dialect;
  }

  /** Runs `work` in one transaction. */
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#store.transaction(work);
  }

  /** Stores a piece (a piece at the same place is replaced). */
  async put(callId: string, channel: number, byteOffset: number, bytes: Uint8Array, db: Executor = this.#db): Promise<void> {
    await db
      .insertInto('recording_chunks')
      .values({ call_id: callId, channel, byte_offset: byteOffset, bytes })
      .onConflict((oc) => oc.columns(['call_id', 'channel', 'byte_offset']).doUpdateSet({ bytes }))
      .execute();
  }

  /** The pieces of `channel` that overlap bytes [from, to), in order. */
  async overlapping(callId: string, channel: number, from: number, to: number, db: Executor = this.#db): Promise<RecordingChunk[]> {
    const rows = await db
      .selectFrom('recording_chunks')
      .select(['byte_offset', 'bytes'])
      .where('call_id', '=', callId)
      .where('channel', '=', channel)
      .where('byte_offset', '<', to)
      .where(sql<number>`byte_offset + ${this.#length()}`, '>', from)
      .orderBy('byte_offset')
      .execute();
    return rows.map((row) => ({ byteOffset: Number(row.byte_offset), bytes: Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength) }));
  }

  /** How far each stored channel of the call reaches, bytes (channels with nothing stored are absent). */
  async extents(callId: string, db: Executor = this.#db): Promise<Map<number, number>> {
    const rows = await db
      .selectFrom('recording_chunks')
      .select(['channel', sql<number>`max(byte_offset + ${this.#length()})`.as('extent')])
      .where('call_id', '=', callId)
      .groupBy('channel')
      .execute();
    return new Map(rows.map((row) => [Number(row.channel), Number(row.extent)]));
  }

  /** Deletes the call's pieces of `channels` (all when omitted). */
  async delete(callId: string, channels?: number[], db: Executor = this.#db): Promise<void> {
    let query = db.deleteFrom('recording_chunks').where('call_id', '=', callId);
    if (channels) query = query.where('channel', 'in', channels);
    await query.execute();
  }

  #length() {
    return this.#dialect === 'postgres' ? sql`octet_length(bytes)` : sql`length(bytes)`;
  }
}
