import type { TranscriptEntry } from '../domain/call.ts';

/** One utterance of the call transcript. Offsets are ms since the pipeline started. */
export interface Utterance {
  role: 'agent' | 'user';
  text: string;
  startMs: number;
  endMs: number;
  /** True when this agent reply was cut off, by the user speaking over it or by the call ending (text = what was heard). */
  cutOff?: boolean;
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
    .map((u) => ({ role: u.role, content: u.text, start_ms: Math.round(u.startMs), end_ms: Math.round(u.endMs), cut_off: u.cutOff === true }));
}

/** Utterances back from a stored `transcript_object` (for redaction). */
export function fromTranscriptObject(entries: readonly TranscriptEntry[]): Utterance[] {
  return entries.map((e) => ({ role: e.role, text: e.content, startMs: e.start_ms, endMs: e.end_ms, ...(e.cut_off ? { cutOff: true } : {}) }));
}
