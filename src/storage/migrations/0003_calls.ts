import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

export const calls = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('calls')
      .addColumn('call_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('call_type', 'text', (c) => c.notNull())
      // No foreign key to agents: a call outlives the deletion of its agent.
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('agent_version', 'integer', (c) => c.notNull())
      .addColumn('agent_name', 'text')
      .addColumn('call_status', 'text', (c) => c.notNull())
      .addColumn('data_storage_setting', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('start_timestamp', 'bigint')
      .addColumn('end_timestamp', 'bigint')
      .addColumn('duration_ms', 'bigint')
      .addColumn('disconnection_reason', 'text')
      .addColumn('metadata', 'text')
      .addColumn('agent_override', 'text')
      .addColumn('service_llm_dynamic_variables', 'text')
      .addColumn('override_dynamic_variables', 'text')
      .addColumn('custom_attributes', 'text')
      .addColumn('current_node_id', 'text')
      .addColumn('current_state', 'text')
      .addColumn('transcript', 'text')
      .addColumn('transcript_object', 'text')
      .addColumn('recording_path', 'text')
      .addColumn('call_analysis', 'text')
      .addColumn('latency', 'text')
      .addColumn('token_id', 'text', (c) => c.notNull())
      .addColumn('token_expires_at', 'bigint', (c) => c.notNull())
      .addColumn('token_used_at', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('calls_account_created').on('calls').columns(['account_id', 'created_at', 'call_id']).execute();
    await db.schema.createIndex('calls_status_token').on('calls').columns(['call_status', 'token_expires_at']).execute();
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('call_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'idempotency_key'])
      .execute();
  },
});
