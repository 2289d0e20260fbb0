import type { TranscriptEntry } from './call.ts';

/**
 * What the server holding a call saves after every utterance, beside the call's lease, so that a
 * call whose server is lost can be ended with what was said (src/storage/lease.repository.ts).
 * The call's dynamic variables need no checkpoint: they live in the call's own row from
 * create-web-call and update-call on.
 */
export interface CallCheckpoint {
  /** The transcript so far, as the call object's `transcript_object`. */
  transcript_object: TranscriptEntry[];
  /** Where a conversation flow is (node id); null for other engines or before the first node. */
  current_node_id: string | null;
  /**
   * The flow's moves so far (ms on the call's timeline), so that a call ended from its checkpoint
   * keeps its path; absent in checkpoints written before it was kept.
   */
  node_transitions?: TimedNodeTransition[];
  /** Where a service LLM is (state name); null for other engines or without states. */
  current_state: string | null;
  /** Whether the conversation reached an end node (the embedded analysis's call_successful). */
  reached_end: boolean;
  /** Names the flow captured, for the PII redactor of `everything_except_pii` calls. */
  names: string[];
  /**
   * The call's audio rate, Hz (8000 on a telephone-band call), at which its recording's tracks
   * are kept; absent in checkpoints written before it was kept (then 16000).
   */
  sample_rate?: number;
}

/** A conversation flow's move between nodes, with when it happened (ms since the pipeline started). */
export interface TimedNodeTransition {
  from: string;
  to: string;
  atMs: number;
  /** Placed after the function-call records of the same instant (a move out of a function node); default before everything of its instant. */
  afterCall?: boolean;
  fromName?: string;
  toName?: string;
}

/** A call whose lease lapsed, just taken over by this server, with its last checkpoint. */
export interface ClaimedLease {
  callId: string;
  checkpoint: CallCheckpoint | null;
}
