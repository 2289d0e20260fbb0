import type { AgentOverride } from '../../domain/agent.ts';
import type { CallAnalysis, CallMetadata, CustomAttributes, DynamicVariables, LatencyReport, TranscriptEntry } from '../../domain/call.ts';
import type { CallStatus, DisconnectionReason } from '../../domain/call-status.ts';
import type { StoragePolicy } from '../../domain/storage-policy.ts';
import type { JsonText } from '../json-column.ts';

/** The `calls` table (migration 0003): a Call (src/domain/call.ts) with its JSON fields as TEXT. */
export interface CallTable {
  call_id: string;
  account_id: string;
  call_type: 'web_call';
  agent_id: string;
  agent_version: number;
  agent_name: string | null;
  call_status: CallStatus;
  data_storage_setting: StoragePolicy;
  created_at: number;
  start_timestamp: number | null;
  end_timestamp: number | null;
  duration_ms: number | null;
  disconnection_reason: DisconnectionReason | null;
  metadata: JsonText<CallMetadata> | null;
  agent_override: JsonText<AgentOverride> | null;
  service_llm_dynamic_variables: JsonText<DynamicVariables> | null;
  override_dynamic_variables: JsonText<DynamicVariables> | null;
  custom_attributes: JsonText<CustomAttributes> | null;
  current_node_id: string | null;
  current_state: string | null;
  transcript: string | null;
  transcript_object: JsonText<TranscriptEntry[]> | null;
  recording_path: string | null;
  call_analysis: JsonText<CallAnalysis> | null;
  latency: JsonText<LatencyReport> | null;
  /** Access token bookkeeping: single use, expiry. */
  token_id: string;
  token_expires_at: number;
  token_used_at: number | null;
  updated_at: number;
}

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
