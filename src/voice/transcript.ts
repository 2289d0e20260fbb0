import type { KnowledgeRetrievalEntry, ToolTranscriptEntry, TranscriptEntry } from '../domain/call.ts';
import type { TimedNodeTransition } from '../domain/call-checkpoint.ts';
import type { ToolCallRecord } from './engines/types.ts';

export type { TimedNodeTransition };

/** One utterance of the call transcript. Offsets are ms since the pipeline started. */
export interface Utterance {
  role: 'agent' | 'user';
  text: string;
  startMs: number;
  endMs: number;
  /**
   * A user's utterance: when its first words reached the server, on the same clock as the agent's
   * starts. The audio timeline can lag that clock (a stalled client), so utterances are ordered by
   * this, not by startMs.
   */
  heardAtMs?: number;
  /** True when this agent reply was cut off, by the user speaking over it or by the call ending (text = what was heard). */
  cutOff?: boolean;
  /**
   * An agent reply during which function calls ran: its heard sentences with when each began to
   * play, so that transcript_with_tool_calls can place the calls between them.
   */
  sentences?: Array<{ text: string; startMs: number }>;
  /** The recognised words with their times on the call's timeline, ms, where the recogniser gives them (a user's utterance). */
  words?: ReadonlyArray<{ word: string; startMs: number; endMs: number }>;
  /** An agent reply spoken by a fallback voice (the agent's `fallback_voice_ids`): that voice. */
  voiceId?: string;
}

/** The call object's `transcript` string: one "Agent: ..." / "User: ..." line per utterance. */
export function formatTranscript(utterances: readonly Utterance[]): string {
  return utterances
    .filter((u) => u.text.trim())
    .map((u) => `${u.role === 'agent' ? 'Agent' : 'User'}: ${u.text}${u.cutOff ? ' [cut off]' : ''}`)
    .join('\n');
}

/** The call object's `transcript_object`: the utterances with words, offsets rounded to ms. */
export function toTranscriptObject(utterances: readonly Utterance[]): TranscriptEntry[] {
  return utterances
    .filter((u) => u.text.trim())
    .map((u) => ({
      role: u.role, content: u.text, start_ms: Math.round(u.startMs), end_ms: Math.round(u.endMs), cut_off: u.cutOff === true,
      ...(u.voiceId ? { voice_id: u.voiceId } : {}),
      // Retell's word times: seconds from the start of the call, where the recogniser gave them.
      ...(u.words && u.words.length > 0 ? { words: u.words.map((w) => ({ word: w.word, start: Math.round(w.startMs) / 1000, end: Math.round(w.endMs) / 1000 })) } : {}),
    }));
}

/** Utterances back from a stored `transcript_object` (for redaction). */
export function fromTranscriptObject(entries: readonly TranscriptEntry[]): Utterance[] {
  return entries.map((e) => ({ role: e.role, text: e.content, startMs: e.start_ms, endMs: e.end_ms, ...(e.cut_off ? { cutOff: true } : {}), ...(e.voice_id ? { voiceId: e.voice_id } : {}) }));
}

/** A function call's invocation or result, with when it happened (ms since the pipeline started). */
export interface TimedToolCall {
  record: ToolCallRecord;
  atMs: number;
}


/** A turn's knowledge-base search, with when its chunks were found (ms since the pipeline started). */
export interface TimedRetrieval {
  chunks: KnowledgeRetrievalEntry['chunks'];
  atMs: number;
}

/**
 * The call object's `transcript_with_tool_calls`: the utterances (by their start) interleaved with
 * the function calls, the flow's node transitions and the knowledge-base searches (by when they
 * happened: a search before the reply it fed, which starts later); an agent reply
 * during which calls ran is split where its audio reached them (the filler, the calls, then the
 * rest). Null when there is nothing to record.
 */
export function toTranscriptWithToolCalls(
  utterances: readonly Utterance[],
  calls: readonly TimedToolCall[],
  transitions: readonly TimedNodeTransition[] = [],
  retrievals: readonly TimedRetrieval[] = [],
): ToolTranscriptEntry[] | null {
  // At the same instant: node transitions first, then utterances (and a reply's first sentence), then calls, then a reply's later sentences.
  const timed: Array<{ at: number; rank: number; entry: ToolTranscriptEntry; of?: Utterance }> = [];
  for (const u of utterances) {
    if (!u.text.trim()) continue;
    if (u.sentences && u.sentences.length > 0) {
      for (const [i, s] of u.sentences.entries()) timed.push({ at: s.startMs, rank: i === 0 ? 0 : 2, entry: { role: u.role, content: s.text }, of: u });
    } else timed.push({ at: orderOf(u), rank: 0, entry: { role: u.role, content: u.text } });
  }
  for (const c of calls) {
    const r = c.record;
    timed.push({
      at: c.atMs,
      rank: 1,
      entry:
        r.type === 'tool_call_invocation'
          ? { role: 'tool_call_invocation', tool_call_id: r.tool_call_id, name: r.name, arguments: r.arguments }
          : { role: 'tool_call_result', tool_call_id: r.tool_call_id, content: r.content },
    });
  }
  for (const t of transitions) {
    timed.push({
      at: t.atMs,
      // A move noticed as a reply starts is placed at that reply's start: before it.
      rank: t.afterCall ? 1.5 : -1,
      entry: {
        role: 'node_transition',
        former_node_id: t.from,
        ...(t.fromName ? { former_node_name: t.fromName } : {}),
        new_node_id: t.to,
        ...(t.toName ? { new_node_name: t.toName } : {}),
        time_sec: Math.round(t.atMs) / 1000,
      },
    });
  }
  // At the instant a reply starts, the search that fed it comes first.
  for (const r of retrievals) timed.push({ at: r.atMs, rank: -0.5, entry: { role: 'knowledge_base_retrieval', chunks: r.chunks } });
  if (timed.length === 0) return null;
  // A stable sort: each side keeps its own order.
  timed.sort((a, b) => a.at - b.at || a.rank - b.rank);
  // Sentences of one reply that no call came between are one utterance again.
  const out: Array<{ entry: ToolTranscriptEntry; of?: Utterance }> = [];
  for (const t of timed) {
    const last = out.at(-1);
    if (t.of && last?.of === t.of && 'content' in last.entry) last.entry = { ...last.entry, content: `${last.entry.content} ${'content' in t.entry ? t.entry.content : ''}` };
    else out.push({ entry: t.entry, ...(t.of ? { of: t.of } : {}) });
  }
  return out.map((t) => t.entry);
}

/** Where an utterance goes among the others: when it was heard (users) or began to play (agent). */
export function orderOf(u: Utterance): number {
  return u.heardAtMs ?? u.startMs;
}
