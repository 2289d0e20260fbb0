import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';

/** Leads, tickets, webhooks, the event outbox and its deliveries and attempts. */
export const webhooks = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    // Lead and ticket ids are integers (spec): SQLite rowids, PostgreSQL sequences.
    const integerId = (table: string) => {
      const builder = db.schema.createTable(table);
      return dialect === 'postgres'
        ? builder.addColumn('id', 'bigserial', (c) => c.primaryKey())
        : builder.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
    };
    await integerId('leads')
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('phone', 'text', (c) => c.notNull())
      .addColumn('email', 'text')
      .addColumn('notes', 'text')
      .addColumn('custom_fields', 'text')
      .addColumn('call_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('leads_account').on('leads').columns(['account_id', 'id']).execute();

    await integerId('tickets')
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('priority', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('lead_id', 'bigint')
      .addColumn('call_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tickets_account').on('tickets').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('secret_encrypted', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('disabled_reason', 'text')
      .addColumn('disabled_at', 'bigint')
      .addColumn('failing_since', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('webhooks_account_url', ['account_id', 'url'])
      .execute();

    await db.schema
      .createTable('agent_webhook_secrets')
      .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
      .addColumn('secret_encrypted', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('webhook_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id'))
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('webhook_id', 'text')
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('endpoint_key', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('lane', 'integer', (c) => c.notNull())
      .addColumn('manual', 'integer', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint')
      .addColumn('locked_until', 'bigint')
      .addColumn('locked_by', 'text')
      .addColumn('last_attempt_at', 'bigint')
      .addColumn('last_status_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('last_latency_ms', 'integer')
      .addColumn('delivered_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      // One delivery of an event per subscription, even if fan-out ran twice.
      .addUniqueConstraint('webhook_deliveries_event_webhook', ['event_id', 'webhook_id'])
      .execute();
    // The queue: due pending deliveries, per lane, oldest first.
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .columns(['status', 'lane', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_account')
      .on('webhook_deliveries')
      .columns(['account_id', 'created_at', 'id'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'status']).execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('latency_ms', 'integer', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('response_excerpt', 'text')
      .addColumn('next_attempt_at', 'bigint')
      .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
      .execute();
  },
});
