import type { DisconnectionReason } from '../domain/call-status.ts';
import type { CallMedia } from '../domain/call.ts';
import type { CallOutcome } from '../services/call-lifecycle.ts';
import { analyzeCall, formatTranscript, latencyReport, toTranscriptObject, toTranscriptWithToolCalls, type AnalysisInput, type EngineOutcome, type TimedNodeTransition, type TimedRetrieval, type TimedToolCall, type TurnLatency, type Utterance } from '../voice/index.ts';
import type { EngineSnapshot } from '../domain/agent.ts';

/** What an ended call's session hands over to be stored (call-session.ts, as the call ends). */
export interface EndedCall {
  reason: DisconnectionReason;
  utterances: readonly Utterance[];
  toolCalls: readonly TimedToolCall[];
  latencies: readonly TurnLatency[];
  /** A flow's node moves (or a service LLM's state changes), and where the conversation ended. */
  transitions: readonly TimedNodeTransition[];
  position: string | null;
  engineType: EngineSnapshot['type'] | undefined;
  /** The knowledge-base searches that fed the agent's replies. */
  retrievals: readonly TimedRetrieval[];
  outcome: Pick<EngineOutcome, 'reachedEnd' | 'ending'>;
  recordingPath: string | null;
  /** Set on calls that listened for an answering machine: whether one answered. */
  inVoicemail?: boolean;
  media: CallMedia | null;
  transferDestination?: string;
  /** The post-call analysis's custom fields, LLM (none: the embedded analysis) and bound. */
  analysis: Pick<AnalysisInput, 'customFields' | 'llm' | 'signal'>;
}

/**
 * The stored form of an ended call: the transcript in its three shapes, where the conversation
 * ended, the post-call analysis (written by the LLM when there is one, else embedded), the latency
 * report and how the call was carried. The call lifecycle applies the storage policy to it.
 */
export async function callOutcome(ended: EndedCall): Promise<CallOutcome> {
  const { reason, utterances, outcome, position, engineType } = ended;
  const analysis = await analyzeCall({
    transcript: utterances,
    disconnectionReason: reason,
    reachedEnd: outcome.reachedEnd,
    ...(outcome.ending ? { ending: outcome.ending } : {}),
    ...ended.analysis,
  });
  const transcript = formatTranscript(utterances);
  return {
    reason,
    transcript: transcript || null,
    transcriptObject: toTranscriptObject(utterances),
    transcriptWithToolCalls: toTranscriptWithToolCalls(utterances, ended.toolCalls, ended.transitions, ended.retrievals),
    // Where the conversation was when it ended, for every client (the caller's own events aside).
    ...(engineType === 'conversation_flow' && position !== null ? { currentNodeId: position } : {}),
    ...(engineType === 'service_llm' && position !== null ? { currentState: position } : {}),
    recordingPath: ended.recordingPath,
    // Retell's in_voicemail, on the calls that listened for a machine.
    callAnalysis: ended.inVoicemail === undefined ? analysis : { ...analysis, in_voicemail: ended.inVoicemail },
    latency: latencyReport(ended.latencies),
    media: ended.media,
    ...(ended.transferDestination === undefined ? {} : { transferDestination: ended.transferDestination }),
  };
}
