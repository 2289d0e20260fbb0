import type { Call } from '../../domain/call.ts';
import type { JsonText } from '../json-column.ts';

/** The fields of a Call stored as JSON text; every other field is a plain column. */
export const CALL_JSON_FIELDS = [
  'metadata',
  'agent_override',
  'service_llm_dynamic_variables',
  'override_dynamic_variables',
  'custom_attributes',
  'transcript_object',
  'transcript_with_tool_calls',
  'call_analysis',
  'latency',
  'media',
] as const satisfies ReadonlyArray<keyof Call>;
export type CallJsonField = (typeof CALL_JSON_FIELDS)[number];

/**
 * The `calls` table (migration 0003): a Call (src/domain/call.ts) column for column, with its
 * status, reason and policy unions, and its JSON fields as nullable TEXT holding their JSON.
 */
export type CallTable = {
  [K in keyof Call]: K extends CallJsonField ? JsonText<NonNullable<Call[K]>> | null : Call[K];
};

export interface IdempotencyKeyTable {
  account_id: string;
  idempotency_key: string;
  request_hash: string;
  call_id: string;
  created_at: number;
}

export interface CallTables {
  calls: CallTable;
  idempotency_keys: IdempotencyKeyTable;
}
