/**
 * What a call's conversation leaves behind while it runs: the transcript (utterances in start
 * order), the function-call records and the latency of each reply, each within the call's bounds
 * (src/voice/record-bounds.ts). The pipeline adds to it; the call session reads it when the call ends.
 */
import type { ToolCallRecord } from './engines/types.ts';
import type { TurnLatency } from './latency.ts';
import { ToolCallBudget, TranscriptBudget } from './record-bounds.ts';
import { type TimedToolCall, type Utterance, orderOf } from './transcript.ts';

/** What the record announces as it grows (the pipeline's events). */
export interface RecordEvents {
  /** The whole transcript, after each utterance added (a new array each time). */
  transcript(transcript: readonly Utterance[]): void;
  toolCall(call: TimedToolCall): void;
  latency(record: TurnLatency): void;
  /** Once per kind: its bound was reached, later entries are not kept. */
  bound(what: 'transcript' | 'tool_calls'): void;
}

export class ConversationRecord {
  readonly #events: RecordEvents;
  readonly #transcript: Utterance[] = [];
  readonly #toolCalls: TimedToolCall[] = [];
  readonly #latencies: TurnLatency[] = [];
  readonly #toolBudget = new ToolCallBudget();
  readonly #transcriptBudget = new TranscriptBudget();
  #transcriptFullSaid = false;

  constructor(events: RecordEvents) {
    this.#events = events;
  }

  /** Utterances so far (a copy). */
  transcript(): Utterance[] {
    return this.#transcript.map((u) => ({ ...u }));
  }

  /** The function calls so far (invocations and results), in the order they happened. */
  toolCalls(): TimedToolCall[] {
    return this.#toolCalls.map((c) => ({ ...c }));
  }

  /** Latency records so far (a copy). */
  latencies(): TurnLatency[] {
    return [...this.#latencies];
  }

  /** Adds an utterance in start order (a user's can be recognised while an earlier agent reply still plays). */
  addUtterance(utterance: Utterance): void {
    const text = this.#transcriptBudget.admit(utterance.text);
    if (text === undefined) {
      if (this.#transcriptBudget.full && !this.#transcriptFullSaid) {
        this.#transcriptFullSaid = true;
        this.#events.bound('transcript');
      }
      return;
    }
    const u = text === utterance.text ? utterance : { ...utterance, text };
    let i = this.#transcript.length;
    while (i > 0 && orderOf(this.#transcript[i - 1]!) > orderOf(u)) i--;
    this.#transcript.splice(i, 0, u);
    this.#events.transcript(this.transcript());
  }

  /** A function-call record the engine reported, at `atMs`: kept within the budget; undefined when dropped. */
  addToolCall(record: ToolCallRecord, atMs: number): TimedToolCall | undefined {
    const kept = this.#toolBudget.admit(record);
    if (!kept) return undefined;
    const call: TimedToolCall = { record: kept, atMs };
    this.#toolCalls.push(call);
    this.#events.toolCall({ ...call });
    if (this.#toolBudget.exhausted) this.#events.bound('tool_calls');
    return call;
  }

  addLatency(record: TurnLatency): void {
    this.#latencies.push(record);
    this.#events.latency({ ...record });
  }
}
