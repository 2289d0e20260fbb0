import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Issue 24: phone numbers. The E.164 number is the key: one number belongs to one account, so an
 * inbound call (a SIP Request-URI, Twilio's `To`) finds its account and agent. Secrets are stored
 * encrypted (src/lib/secret-box.ts).
 */
export const phoneNumbers = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('phone_numbers')
      .addColumn('phone_number', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('nickname', 'text')
      .addColumn('inbound_agent_id', 'text')
      .addColumn('inbound_agent_version', 'integer')
      .addColumn('outbound_agent_id', 'text')
      .addColumn('outbound_agent_version', 'integer')
      .addColumn('inbound_webhook_url', 'text')
      .addColumn('termination_uri', 'text')
      .addColumn('sip_trunk_auth_username', 'text')
      .addColumn('sip_trunk_auth_password_encrypted', 'text')
      .addColumn('twilio_account_sid_encrypted', 'text')
      .addColumn('twilio_auth_token_encrypted', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('phone_numbers_account').on('phone_numbers').columns(['account_id', 'phone_number']).execute();
  },
});
