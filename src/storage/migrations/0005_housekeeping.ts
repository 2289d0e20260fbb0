import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Indexes that let housekeeping find old rows without scanning. */
export const housekeeping = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();
    await db.schema.createIndex('webhook_events_created').on('webhook_events').column('created_at').execute();
    await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
    await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').columns(['created_at', 'status']).execute();
  },
});
