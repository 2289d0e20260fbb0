import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Issue 23: the call object's `media` (how the call was carried; JSON text, null until the call ends). */
export const callMedia = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('calls').addColumn('media', 'text').execute();
  },
});
