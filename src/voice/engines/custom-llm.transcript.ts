/**
 * The conversation a custom LLM's server is sent (docs/custom-llm.md): `transcript`, and
 * `transcript_with_tool_calls` (the utterances with the server's own tool-call records between
 * them) for a server whose `config` asks for it.
 */
import type { ToolCallRecord } from './types.ts';

export interface Utterance {
  role: 'agent' | 'user';
  content: string;
}

/** An entry of `transcript_with_tool_calls`, as Retell's call object spells it. */
export type ToolTranscriptEntry =
  | Utterance
  | { role: 'tool_call_invocation'; tool_call_id: string; name: string; arguments: string }
  | { role: 'tool_call_result'; tool_call_id: string; content: string };

export class LlmTranscript {
  readonly #utterances: Utterance[] = [];
  readonly #withTools: ToolTranscriptEntry[] = [];

  /**
   * The user finished a turn. Words that follow a user turn the agent did not answer aloud (the
   * user went on before any reply was heard) belong to that turn: they are merged into it, so the
   * server is asked once about the whole of what the user said, never about half of it.
   */
  user(text: string): void {
    const last = this.#utterances.at(-1);
    if (last?.role === 'user') {
      last.content = joinWords(last.content, text);
      const entry = this.#withTools.at(-1);
      if (entry?.role === 'user') entry.content = last.content;
      else this.#withTools.push({ role: 'user', content: text });
      return;
    }
    this.#utterances.push({ role: 'user', content: text });
    this.#withTools.push({ role: 'user', content: text });
  }

  /** What the user heard of an agent utterance. */
  agent(text: string): void {
    this.#utterances.push({ role: 'agent', content: text });
    this.#withTools.push({ role: 'agent', content: text });
  }

  /** A tool-call record from the server (already within the call's budget). */
  tool(record: ToolCallRecord): void {
    if (record.type === 'tool_call_invocation') this.#withTools.push({ role: 'tool_call_invocation', tool_call_id: record.tool_call_id, name: record.name, arguments: record.arguments });
    else this.#withTools.push({ role: 'tool_call_result', tool_call_id: record.tool_call_id, content: record.content });
  }

  /**
   * The fields of an event: `transcript`, and `transcript_with_tool_calls` when `withTools`.
   * `partial` is the user's utterance being spoken (a live interim hypothesis): it ends the
   * transcript as a user entry, merged into an unanswered user turn like a final one.
   */
  fields(withTools: boolean, partial?: string): { transcript: Utterance[]; transcript_with_tool_calls?: ToolTranscriptEntry[] } {
    const transcript = withPartial(this.#utterances, partial);
    return withTools ? { transcript, transcript_with_tool_calls: withPartial(this.#withTools, partial) } : { transcript };
  }
}

/**
 * A copy of `entries` as sent, the partial joined in. Each utterance carries `words`, Retell's
 * word timings: always an array, empty as the recogniser's word times do not reach the engine
 * (Retell's own demo servers index `words` on every utterance).
 */
function withPartial<T extends { role: string }>(entries: readonly T[], partial: string | undefined): T[] {
  const copy = entries.map((e) => ({ ...e }));
  if (partial !== undefined && partial !== '') {
    const last = copy.at(-1) as Utterance | undefined;
    if (last?.role === 'user') last.content = joinWords(last.content, partial);
    else copy.push({ role: 'user', content: partial } as Utterance as unknown as T);
  }
  for (const e of copy) if (e.role === 'agent' || e.role === 'user') (e as T & { words?: unknown[] }).words = [];
  return copy;
}

function joinWords(a: string, b: string): string {
  return a && b ? `${a} ${b}` : a || b;
}
