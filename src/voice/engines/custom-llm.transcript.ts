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

/** Retell's word timing on the socket: seconds from the start of the call. */
export interface WireWord {
  word: string;
  start: number;
  end: number;
}

/** Word times as the pipeline gives them: ms on the call's timeline. */
type Timed = ReadonlyArray<{ word: string; startMs: number; endMs: number }>;

/** An entry of `transcript_with_tool_calls`, as Retell's call object spells it. */
export type ToolTranscriptEntry =
  | Utterance
  | { role: 'tool_call_invocation'; tool_call_id: string; name: string; arguments: string }
  | { role: 'tool_call_result'; tool_call_id: string; content: string };

export class LlmTranscript {
  readonly #utterances: Utterance[] = [];
  readonly #withTools: ToolTranscriptEntry[] = [];
  /** Each utterance's words on the wire, where known (a merged turn's: only when every fragment had them). */
  readonly #words = new WeakMap<object, WireWord[] | undefined>();

  /**
   * The user finished a turn. Words that follow a user turn the agent did not answer aloud (the
   * user went on before any reply was heard) belong to that turn: they are merged into it, so the
   * server is asked once about the whole of what the user said, never about half of it.
   */
  user(text: string, words?: Timed): void {
    const wire = words && words.length > 0 ? words.map(toWire) : undefined;
    const last = this.#utterances.at(-1);
    if (last?.role === 'user') {
      last.content = joinWords(last.content, text);
      const merged = this.#words.get(last) && wire ? [...this.#words.get(last)!, ...wire] : undefined;
      this.#words.set(last, merged);
      const entry = this.#withTools.at(-1);
      if (entry?.role === 'user') {
        entry.content = last.content;
        this.#words.set(entry, merged);
      } else {
        const fragment = { role: 'user' as const, content: text };
        this.#words.set(fragment, wire);
        this.#withTools.push(fragment);
      }
      return;
    }
    const utterance = { role: 'user' as const, content: text };
    const entry = { role: 'user' as const, content: text };
    this.#words.set(utterance, wire);
    this.#words.set(entry, wire);
    this.#utterances.push(utterance);
    this.#withTools.push(entry);
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
    const words = (e: object): WireWord[] => this.#words.get(e) ?? [];
    const transcript = withPartial(this.#utterances, partial, words);
    return withTools ? { transcript, transcript_with_tool_calls: withPartial(this.#withTools, partial, words) } : { transcript };
  }
}

/**
 * A copy of `entries` as sent, the partial joined in. Each utterance carries `words`, Retell's
 * word timings: the recogniser's where it gave them, else an empty array (Retell's own demo
 * servers index `words` on every utterance). A turn with a partial joined has none: the interim
 * hypothesis has no times.
 */
function withPartial<T extends { role: string }>(entries: readonly T[], partial: string | undefined, wordsOf: (e: object) => WireWord[]): T[] {
  const copy = entries.map((e) => ({ ...e, ...(e.role === 'agent' || e.role === 'user' ? { words: wordsOf(e) } : {}) }));
  if (partial !== undefined && partial !== '') {
    const last = copy.at(-1) as (Utterance & { words: WireWord[] }) | undefined;
    if (last?.role === 'user') {
      last.content = joinWords(last.content, partial);
      last.words = [];
    } else copy.push({ role: 'user', content: partial, words: [] } as Utterance as unknown as T & { words: WireWord[] });
  }
  return copy;
}

function toWire(w: { word: string; startMs: number; endMs: number }): WireWord {
  return { word: w.word, start: Math.round(w.startMs) / 1000, end: Math.round(w.endMs) / 1000 };
}

function joinWords(a: string, b: string): string {
  return a && b ? `${a} ${b}` : a || b;
}
