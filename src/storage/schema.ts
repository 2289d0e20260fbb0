/**
 * Table shapes as Kysely sees them. Timestamps are epoch milliseconds (BIGINT); JSON is stored as
 * TEXT on both dialects so one set of queries serves SQLite and PostgreSQL alike.
 * Each area declares its tables in its own file and is listed here.
 */
import type { FoundationTables } from './tables/foundation.tables.ts';
import type { AgentTables } from './tables/agent.tables.ts';
import type { CallTables } from './tables/call.tables.ts';
import type { WebhookTables } from './tables/webhook.tables.ts';
import type { LeaseTables } from './tables/lease.tables.ts';
import type { RecordingTables } from './tables/recording.tables.ts';
import type { PhoneNumberTables } from './tables/phone-number.tables.ts';

export interface Database extends FoundationTables, AgentTables, CallTables, WebhookTables, LeaseTables, RecordingTables, PhoneNumberTables {}
