import type { AgentOverride } from './agent.ts';
import type { CallStatus, DisconnectionReason } from './call-status.ts';
import type { StoragePolicy } from './storage-policy.ts';

/**
 * A call as the service knows it: what the store keeps of it, decoded (JSON fields parsed,
 * statuses and policies as their unions). The repository reads and writes it
 * (src/storage/call.repository.ts); the API's call object is derived from it
 * (src/services/call.view.ts), which adds `recording_url` and, at creation, the access token.
 */
/** How a call reaches the agent: from a browser (or any transport joined with an access token), or from a phone. */
export const CALL_TYPES = ['web_call', 'phone_call'] as const;
export type CallType = (typeof CALL_TYPES)[number];

/** A phone call's direction, from the account's side. */
export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
export type CallDirection = (typeof CALL_DIRECTIONS)[number];

/** What a phone transport tells of a call when it is admitted (the call object's phone fields). */
export interface PhoneCallFields {
  /** Null where nobody said (a call registered by register-phone-call without it). */
  from_number: string | null;
  to_number: string | null;
  direction: CallDirection;
  telephony_identifier: string;
}

/**
 * The phone fields that are PII under `everything_except_pii` and `basic_attributes_only`: the far
 * party's number (the caller of an inbound call, the callee of an outbound one). The account's own
 * number (imported by the account, not a person's) is kept, so calls stay attributable to numbers.
 */
export function phonePiiChanges(row: Pick<Call, 'call_type' | 'direction' | 'transfer_destination'>): CallChanges {
  if (row.call_type !== 'phone_call') return {};
  const far: CallChanges = row.direction === 'outbound' ? { to_number: null } : { from_number: null };
  return row.transfer_destination === null ? far : { ...far, transfer_destination: null };
}

export interface Call {
  call_id: string;
  account_id: string;
  /** Set by the call's admission: create-web-call makes `web_call`s; other transports admit their own. */
  call_type: CallType;
  agent_id: string;
  agent_version: number;
  agent_name: string | null;
  call_status: CallStatus;
  data_storage_setting: StoragePolicy;
  /** Epoch ms. */
  created_at: number;
  /** Epoch ms of the join (registered -> ongoing); null until then. */
  start_timestamp: number | null;
  end_timestamp: number | null;
  duration_ms: number | null;
  disconnection_reason: DisconnectionReason | null;
  metadata: CallMetadata | null;
  agent_override: AgentOverride | null;
  service_llm_dynamic_variables: DynamicVariables | null;
  override_dynamic_variables: DynamicVariables | null;
  custom_attributes: CustomAttributes | null;
  current_node_id: string | null;
  current_state: string | null;
  transcript: string | null;
  transcript_object: TranscriptEntry[] | null;
  /** The utterances interleaved with function calls (invocations and results); null when none is kept. */
  transcript_with_tool_calls: ToolTranscriptEntry[] | null;
  /** The recording's path relative to DATA_DIR; null when there is none. */
  recording_path: string | null;
  call_analysis: CallAnalysis | null;
  latency: LatencyReport | null;
  /** How the call was carried (transport, codec, traffic), filled when it ends; null before, and for calls never joined. */
  media: CallMedia | null;
  /** Issue 24, phone calls only (null on web calls): the caller's number (E.164, or a SIP user when not a number). */
  from_number: string | null;
  /** The called number. */
  to_number: string | null;
  direction: CallDirection | null;
  /** The carrier's id of the call: the SIP Call-ID, or Twilio's CallSid. */
  telephony_identifier: string | null;
  /** Where the call was transferred (a number or SIP URI); null unless it was. */
  transfer_destination: string | null;
  /** Access token bookkeeping: the token's id (in its signed claims), expiry and single use. */
  token_id: string;
  token_expires_at: number;
  token_used_at: number | null;
  updated_at: number;
}

/** Fields of a call a write may change (its id and owner never change). */
export type CallChanges = Partial<Omit<Call, 'call_id' | 'account_id'>>;

/** Free-form metadata of the caller (at most 50 KB of JSON). */
export type CallMetadata = Record<string, unknown>;
/** Variable names to string values (`service_llm_dynamic_variables`, `override_dynamic_variables`). */
export type DynamicVariables = Record<string, string>;
/** `custom_attributes`: values are strings, numbers or booleans. */
export type CustomAttributes = Record<string, string | number | boolean>;

/** One entry of the call object's `transcript_object`. */
export interface TranscriptEntry {
  role: 'agent' | 'user';
  content: string;
  /** Offsets on the call's timeline (ms since the media started; the recording's time). */
  start_ms: number;
  end_ms: number;
  /** The agent was interrupted before it finished this utterance. */
  cut_off: boolean;
  /** Retell's word times: each word with its start and end, seconds from the start of the call; only where the recogniser gives them. */
  words?: Array<{ word: string; start: number; end: number }>;
  /** An agent utterance spoken by a fallback voice (the agent's `fallback_voice_ids`, after its voice's provider failed): that voice. */
  voice_id?: string;
}

/**
 * One entry of `transcript_with_tool_calls`: an utterance, a function call's invocation or result,
 * a conversation flow's move from one node to another (Retell's `node_transition` entry; the
 * names are there when the nodes have one; `time_sec` is on the call's timeline), or the chunks a
 * knowledge-base search found for a turn.
 */
export type ToolTranscriptEntry =
  | { role: 'agent' | 'user'; content: string }
  | { role: 'tool_call_invocation'; tool_call_id: string; name: string; arguments: string }
  | { role: 'tool_call_result'; tool_call_id: string; content: string }
  | NodeTransitionEntry
  | KnowledgeRetrievalEntry;

/**
 * The chunks a turn's knowledge-base search found (issue 29), placed before the reply they fed:
 * the best first, each with its knowledge base, source (document) and score. docs/knowledge-bases.md.
 */
export interface KnowledgeRetrievalEntry {
  role: 'knowledge_base_retrieval';
  chunks: Array<{ text: string; score: number; source_id: string; knowledge_base_id: string }>;
}

/** A conversation flow's move between nodes, as `transcript_with_tool_calls` records it. */
export interface NodeTransitionEntry {
  role: 'node_transition';
  former_node_id: string;
  former_node_name?: string;
  new_node_id: string;
  new_node_name?: string;
  time_sec: number;
}

/** A value of `call_analysis.custom_analysis_data`: of the field's declared type, or null when not filled. */
export type CustomAnalysisValue = string | number | boolean | null;

/** The call object's `call_analysis`. */
export interface CallAnalysis {
  call_summary: string;
  call_successful: boolean;
  user_sentiment: 'Positive' | 'Negative' | 'Neutral' | 'Unknown';
  /**
   * The agent's `post_call_analysis_data` fields by name, filled by the LLM; present when the
   * agent declares fields (every value null without an LLM or when it fails).
   */
  custom_analysis_data?: Record<string, CustomAnalysisValue>;
  /** Retell's: the call reached an answering machine; present on calls that listened for one (issue 24, voicemail detection). */
  in_voicemail?: boolean;
}

/** Distribution of one latency kind, ms (the call object's `latency.e2e` etc.). */
export interface LatencySummary {
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
  num: number;
  values: number[];
}

/**
 * The call object's `latency`: end to end, recognition, language model and synthesis, ms; and the
 * custom-function round trips that delayed replies, when any did.
 */
export interface LatencyReport {
  e2e: LatencySummary;
  asr: LatencySummary;
  llm: LatencySummary;
  tts: LatencySummary;
  function_call?: LatencySummary;
  /** Finding each turn's reference material (a knowledge base) before the LLM request; absent when none was asked. */
  knowledge_base?: LatencySummary;
}

/**
 * How a call was carried, as its endpoint measured it by the end of the call (`in` is from the
 * caller, `out` to the caller). A field its transport cannot measure is null. A basic attribute:
 * kept under every storage policy.
 */
export interface CallMedia {
  /** `websocket`, `loopback`; later `webrtc`, `sip`, `twilio`. */
  transport: string;
  /** The audio's encoding on the wire: `pcm16`, `opus`, `pcmu`, `pcma`. */
  codec: string;
  /** The wire's sample rate, Hz. */
  sample_rate: number;
  bytes_in: number | null;
  bytes_out: number | null;
  packets_in: number | null;
  packets_out: number | null;
  /** Packets from the caller that never arrived. */
  packets_lost: number | null;
  /** Interarrival jitter of the caller's packets, ms (RFC 3550). */
  jitter_ms: number | null;
}
