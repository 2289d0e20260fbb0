/** One utterance of the call transcript. Offsets are ms since the pipeline started. */
export interface Utterance {
  role: 'agent' | 'user';
  text: string;
  startMs: number;
  endMs: number;
  /** True when the user spoke over the agent and this reply was cut off (text = what was heard). */
  cutOff?: boolean;
}

/** The call object's `transcript` string: one "Agent: ..." / "User: ..." line per utterance. */
export function formatTranscript(utterances: readonly Utterance[]): string {
  return utterances
    .filter((u) => u.text.trim())
    .map((u) => `${u.role === 'agent' ? 'Agent' : 'User'}: ${u.text}${u.cutOff ? ' [cut off]' : ''}`)
    .join('\n');
}
