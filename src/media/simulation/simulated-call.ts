/**
 * The call of a simulated call: a call object no store holds (it goes to the engine and to a
 * custom LLM's server as a call would), the store that keeps its outcome in the run, and a
 * recording that is never kept.
 */
import type { TestCase } from '../../domain/agent-test.ts';
import type { Call } from '../../domain/call.ts';
import type { CallCheckpoint } from '../../domain/call-checkpoint.ts';
import { newId } from '../../lib/ids.ts';
import type { ResolvedAgentVersion } from '../../services/agent.service.ts';
import type { CallOutcome } from '../../services/call-lifecycle.ts';
import type { RecordingStore, RecordingWriter } from '../../services/recording-store.ts';
import type { SessionCallService } from '../call-session.ts';

/**
 * A case's call: a web call on the case's agent version, with its metadata and dynamic variables.
 * No store keeps it, so its storage policy hides nothing: a custom LLM's server is sent the case's
 * variables, as it is a call's on an agent that stores everything.
 */
export function simulatedCall(accountId: string, testCase: TestCase, agent: ResolvedAgentVersion): Call {
  const now = Date.now();
  return {
    call_id: newId('call'), account_id: accountId, call_type: 'web_call', agent_id: agent.agentId, agent_version: agent.version, agent_name: agent.config.agent_name ?? null,
    call_status: 'ongoing', data_storage_setting: 'everything', created_at: now, start_timestamp: now, end_timestamp: null, duration_ms: null, disconnection_reason: null,
    metadata: testCase.metadata, agent_override: null, service_llm_dynamic_variables: testCase.dynamic_variables, override_dynamic_variables: null, custom_attributes: null,
    current_node_id: null, current_state: null, transcript: null, transcript_object: null, transcript_with_tool_calls: null, recording_path: null, call_analysis: null,
    latency: null, media: null, token_id: 'simulated', token_expires_at: now, token_used_at: now, updated_at: now,
    from_number: null, to_number: null, direction: null, telephony_identifier: null, transfer_destination: null,
  };
}

/** A store for a call nobody stores: it hands the session its call and keeps the outcome. */
export class SimulatedCallStore implements SessionCallService {
  outcome: CallOutcome | undefined;
  readonly #call: Call;
  constructor(call: Call) {
    this.#call = call;
  }
  async readCall(): Promise<Call | undefined> {
    return this.#call;
  }
  async finishCall(_callId: string, outcome: CallOutcome): Promise<boolean> {
    this.outcome = outcome;
    return true;
  }
  async checkpointCall(_callId: string, _checkpoint: CallCheckpoint): Promise<boolean> {
    return true;
  }
}

/** A recording that is never kept. */
export const DISCARDED: RecordingStore = {
  open: (): RecordingWriter => ({ writeChunk: async () => {}, finish: async () => null, discard: async () => {} }),
  size: async () => null,
  read: () => {
    throw new Error('simulated calls keep no recording');
  },
  silence: async () => {},
  delete: async () => {},
  recover: async () => null,
};

/** What a function the case reaches for real is told about the call: the case, its agent version and metadata. */
export function caseCallDetails(testCase: TestCase, agent: ResolvedAgentVersion): () => unknown {
  return () => ({ test_case_id: testCase.test_case_id, agent_id: agent.agentId, agent_version: agent.version, metadata: testCase.metadata, simulated: true });
}
