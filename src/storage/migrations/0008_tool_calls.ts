import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Issue 11: the call object's `transcript_with_tool_calls` (JSON text, null until the call ends). */
export const toolCalls = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('calls').addColumn('transcript_with_tool_calls', 'text').execute();
  },
});
