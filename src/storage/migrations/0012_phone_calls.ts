import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Issue 24: the call object's phone fields (null on web calls); calls are found by their carrier's id. */
export const phoneCalls = (): Migration => ({
  async up(db: Kysely<any>) {
    for (const column of ['from_number', 'to_number', 'direction', 'telephony_identifier', 'transfer_destination']) {
      await db.schema.alterTable('calls').addColumn(column, 'text').execute();
    }
    await db.schema.createIndex('calls_telephony_identifier').on('calls').column('telephony_identifier').execute();
  },
});
