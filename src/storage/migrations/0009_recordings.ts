import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/**
 * Recordings in the database (used on PostgreSQL, where any server must serve any call's
 * recording): pieces of a call's tracks while it runs (channel 0 the user, 1 the agent: 16-bit
 * mono PCM at a byte offset of the track), then the final WAV in fixed-size pieces (channel 2, at
 * byte offsets of the file). No foreign key: deleting a call deletes its pieces explicitly.
 */
export const recordings = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('recording_chunks')
      .addColumn('call_id', 'text', (c) => c.notNull())
      .addColumn('channel', 'integer', (c) => c.notNull())
      .addColumn('byte_offset', 'bigint', (c) => c.notNull())
      .addColumn('bytes', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
      .addPrimaryKeyConstraint('recording_chunks_pk', ['call_id', 'channel', 'byte_offset'])
      .execute();
  },
});
