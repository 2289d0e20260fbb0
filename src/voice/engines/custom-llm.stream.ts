/**
 * The stream of one response (or agent_interrupt) of a custom LLM's server: the items the socket
 * pushes, pulled in order by the engine's reader (CustomLlmEngine.respond, begin, unprompted).
 */
import { TRANSFER_DESTINATION_PATTERN } from '../../domain/custom-function.ts';
import { MAX_RESPONSE_CHARS } from './custom-llm.settings.ts';
import type { ToolCallRecord } from './types.ts';

/** Items of the response being streamed, in order; `transferTo`: the response's transfer_number (issue 24). */
export type Item = { kind: 'text'; text: string } | { kind: 'tool'; record: ToolCallRecord } | { kind: 'done'; endCall: boolean; transferTo?: string };

const TRANSFER_DESTINATION = new RegExp(TRANSFER_DESTINATION_PATTERN);

/**
 * Applies the content and flags of a `response` or `agent_interrupt` event (`what`: which, for the
 * message) to its stream; returns why it breaks the protocol, or null. A `transfer_number` (an
 * E.164 number or a SIP URI; null is none) completes the response, as `end_call` does.
 */
export function applyContent(stream: ResponseStream, event: Record<string, unknown>, what: string): string | null {
  if (event['content'] !== undefined && typeof event['content'] !== 'string') return `${what} whose content is not a string`;
  const content = typeof event['content'] === 'string' ? event['content'] : '';
  stream.chars += content.length;
  if (stream.chars > MAX_RESPONSE_CHARS) return `${what} longer than ${MAX_RESPONSE_CHARS} characters`;
  const transfer = event['transfer_number'] ?? undefined;
  if (transfer !== undefined && (typeof transfer !== 'string' || !TRANSFER_DESTINATION.test(transfer))) return `${what} whose transfer_number is not an E.164 number or SIP URI`;
  if (event['no_interruption_allowed'] === true) stream.noInterruption = true;
  if (content) stream.push({ kind: 'text', text: content });
  if (event['content_complete'] === true || event['end_call'] === true || transfer !== undefined) {
    stream.push({ kind: 'done', endCall: event['end_call'] === true, ...(typeof transfer === 'string' ? { transferTo: transfer } : {}) });
  }
  return null;
}

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

/** The record of a `tool_call_invocation` or `tool_call_result` event, or why it breaks the protocol. */
export function toolRecord(event: Record<string, unknown>): ToolCallRecord | string {
  const id = event['tool_call_id'];
  if (event['response_type'] === 'tool_call_invocation') {
    const name = event['name'];
    if (typeof id !== 'string' || typeof name !== 'string') return 'a tool_call_invocation without tool_call_id and name';
    const args = typeof event['arguments'] === 'string' ? event['arguments'] : JSON.stringify(event['arguments'] ?? {});
    return { type: 'tool_call_invocation', tool_call_id: id, name, arguments: args };
  }
  if (typeof id !== 'string') return 'a tool_call_result without tool_call_id';
  const content = typeof event['content'] === 'string' ? event['content'] : JSON.stringify(event['content'] ?? '');
  return { type: 'tool_call_result', tool_call_id: id, content: content.slice(0, MAX_RESPONSE_CHARS) };
}

/** A complete stream that only carries `record` (the result of a refused transfer, spoken as unprompted output). */
export function recordOnly(record: ToolCallRecord): ResponseStream {
  const stream = new ResponseStream(-1);
  stream.push({ kind: 'tool', record });
  stream.push({ kind: 'done', endCall: false });
  return stream;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
