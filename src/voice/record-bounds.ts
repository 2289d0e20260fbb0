/**
 * What one call may make the service keep: its transcript and its function-call records. A peer
 * (a custom-LLM server, a function backend, a provider) decides what goes into them, so each has a
 * bound in count and size; together they bound the stored call and its `call.finished` body
 * (docs/voice-pipeline.md, "What a call keeps").
 */
import type { ToolCallRecord } from './engines/types.ts';

/**
 * Longest `arguments` of an invocation or `content` of a result kept, characters; longer ones are
 * cut and say so. Above what the engines already give (a function's answer: 15,000 characters and
 * its note; a custom LLM's result: 10,000), so that it cuts only what nothing else bounded.
 */
export const TOOL_CALL_FIELD_MAX_CHARS = 16_000;
/** Function-call records (invocations and results) kept per call. */
export const TOOL_CALL_RECORDS_PER_CALL = 200;
/** Characters of arguments and results kept per call, all records together. */
export const TOOL_CALL_CHARS_PER_CALL = 262_144;
/** The `tool_call_id` of the record that says the call's records were cut. */
export const RECORDS_CUT_ID = 'records_cut';

/**
 * A conversation flow's node transitions kept per call (`node_transition` entries); a flow that
 * loops longer keeps its first moves and its last node (`current_node_id`).
 */
export const NODE_TRANSITIONS_PER_CALL = 1_000;

/**
 * Knowledge-base searches recorded per call (`knowledge_base_retrieval` entries); later ones are
 * not recorded. Each chunk's text is cut to KNOWLEDGE_CHUNK_MAX_CHARS.
 */
export const KNOWLEDGE_RETRIEVALS_PER_CALL = 200;
export const KNOWLEDGE_CHUNK_MAX_CHARS = 4_000;

/** Longest utterance kept, characters (about ten minutes of speech); longer text is cut. */
export const UTTERANCE_MAX_CHARS = 10_000;
/** Utterances kept per call (a turn every 1.5 s for the longest call). */
export const TRANSCRIPT_MAX_UTTERANCES = 5_000;
/** Characters of utterance text kept per call, all utterances together (two hours of two people talking is about 150 000). */
export const TRANSCRIPT_MAX_CHARS = 250_000;

// eslint-disable-next-line no-control-regex -- the point is to match them
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

/** `text` cut to `max` characters, with a note saying so. */
export function capText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} [cut: only the first ${max} characters are kept]`;
}

/**
 * The budget of one call's function-call records: each record's field is cut to
 * TOOL_CALL_FIELD_MAX_CHARS; past TOOL_CALL_RECORDS_PER_CALL records or TOOL_CALL_CHARS_PER_CALL
 * characters, one marker record (a result with tool_call_id RECORDS_CUT_ID) says so and the
 * later records are dropped. The call goes on: the records are a log, not the conversation.
 */
export class ToolCallBudget {
  #records = 0;
  #chars = 0;
  #cut = false;

  /** The record to keep (cut to size), the marker once the budget is spent, or undefined: drop it. */
  admit(record: ToolCallRecord): ToolCallRecord | undefined {
    if (this.#cut) return undefined;
    const capped: ToolCallRecord =
      record.type === 'tool_call_invocation'
        ? { ...record, name: record.name.slice(0, 256), arguments: capText(record.arguments, TOOL_CALL_FIELD_MAX_CHARS) }
        : { ...record, content: capText(record.content, TOOL_CALL_FIELD_MAX_CHARS) };
    const chars = capped.tool_call_id.length + (capped.type === 'tool_call_invocation' ? capped.name.length + capped.arguments.length : capped.content.length);
    if (this.#records + 1 > TOOL_CALL_RECORDS_PER_CALL || this.#chars + chars > TOOL_CALL_CHARS_PER_CALL) {
      this.#cut = true;
      return {
        type: 'tool_call_result',
        tool_call_id: RECORDS_CUT_ID,
        content: `[function-call records cut: this call reached its bound of ${TOOL_CALL_RECORDS_PER_CALL} records or ${TOOL_CALL_CHARS_PER_CALL} characters; later calls are not recorded]`,
      };
    }
    this.#records += 1;
    this.#chars += chars;
    return capped;
  }

  /** The budget is spent: later records are dropped. */
  get exhausted(): boolean {
    return this.#cut;
  }
}

/**
 * The budget of one call's transcript: each utterance cut to UTTERANCE_MAX_CHARS; past
 * TRANSCRIPT_MAX_UTTERANCES utterances or TRANSCRIPT_MAX_CHARS characters, later utterances are
 * not kept (the conversation goes on; the log says so once).
 */
export class TranscriptBudget {
  #utterances = 0;
  #chars = 0;
  #full = false;

  /** The text to keep (cut to size), or undefined when the transcript is full. */
  admit(text: string): string | undefined {
    if (this.#full) return undefined;
    // Control characters are no part of speech (and JSON would spell each in six bytes).
    const kept = capText(text.replace(CONTROL_CHARACTERS, ' '), UTTERANCE_MAX_CHARS);
    if (this.#utterances + 1 > TRANSCRIPT_MAX_UTTERANCES || this.#chars + kept.length > TRANSCRIPT_MAX_CHARS) {
      this.#full = true;
      return undefined;
    }
    this.#utterances += 1;
    this.#chars += kept.length;
    return kept;
  }

  get full(): boolean {
    return this.#full;
  }
}
