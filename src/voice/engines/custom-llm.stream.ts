/**
 * The stream of one response (or agent_interrupt) of a custom LLM's server: the items the socket
 * pushes, pulled in order by the engine's reader (CustomLlmEngine.respond, begin, unprompted).
 */
import type { ToolCallRecord } from './types.ts';

/** Items of the response being streamed, in order. */
export type Item = { kind: 'text'; text: string } | { kind: 'tool'; record: ToolCallRecord } | { kind: 'done'; endCall: boolean };

/** The stream of one response_id: items pushed by the socket, pulled by respond()/begin(). */
export class ResponseStream {
  readonly id: number;
  readonly items: Item[] = [];
  chars = 0;
  /** Its content_complete (or end_call) arrived. */
  complete = false;
  /** Its reader stopped (complete, cut off, or no begin message in time). */
  finished = false;
  /** One of its events carried `no_interruption_allowed: true`: the user cannot barge in on it. */
  noInterruption = false;
  wake: (() => void) | undefined;
  constructor(id: number) {
    this.id = id;
  }
  push(item: Item): void {
    if (item.kind === 'done') this.complete = true;
    this.items.push(item);
    this.wake?.();
  }
}
