export interface CallTable {
  call_id: string;
  account_id: string;
  call_type: string;
  agent_id: string;
  agent_version: number;
  agent_name: string | null;
  call_status: string;
  data_storage_setting: string;
  created_at: number;
  start_timestamp: number | null;
  end_timestamp: number | null;
  duration_ms: number | null;
  disconnection_reason: string | null;
  /** JSON columns. */
  metadata: string | null;
  agent_override: string | null;
  service_llm_dynamic_variables: string | null;
  override_dynamic_variables: string | null;
  custom_attributes: string | null;
  current_node_id: string | null;
  current_state: string | null;
  transcript: string | null;
  transcript_object: string | null;
  recording_path: string | null;
  call_analysis: string | null;
  latency: string | null;
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
