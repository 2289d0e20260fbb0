import type { CallAnalysis, CustomAnalysisValue } from '../domain/call.ts';
import { parseBoundedJson } from '../lib/bounded-json.ts';
import type { PostCallAnalysisField } from '../domain/agent.ts';
import type { LlmProvider } from '../providers/llm.ts';
import { chatText } from '../providers/llm.ts';
import type { Utterance } from './transcript.ts';
import type { EngineEnding } from './engines/types.ts';
import { formatTranscript } from './transcript.ts';

export type { CallAnalysis };

export interface AnalysisInput {
  transcript: readonly Utterance[];
  /** The call's disconnection reason, e.g. 'agent_hangup', 'user_hangup', 'error_asr'. */
  disconnectionReason?: string;
  /** From the engine: an end node was reached or end_call was called (engines that give no `ending`). */
  reachedEnd?: boolean;
  /** From the engine: how it ended the conversation, when it did; decides `call_successful`. */
  ending?: EngineEnding;
  /** The agent's custom fields (`post_call_analysis_data`): the LLM fills them, null where it cannot. */
  customFields?: readonly PostCallAnalysisField[];
  /** When set, the analysis is asked of the LLM (falls back to the embedded method on failure). */
  llm?: LlmProvider;
  signal?: AbortSignal;
}

const POSITIVE = new Set(['thanks', 'thank', 'great', 'good', 'perfect', 'awesome', 'excellent', 'wonderful', 'love', 'happy', 'nice', 'appreciate', 'helpful', 'glad', 'fantastic', 'amazing', 'yes', 'sure', 'cool', 'lovely']);
const NEGATIVE = new Set(['bad', 'terrible', 'awful', 'angry', 'upset', 'hate', 'annoyed', 'frustrated', 'frustrating', 'problem', 'wrong', 'broken', 'worst', 'useless', 'complaint', 'disappointed', 'ridiculous', 'cancel', 'stupid', 'horrible', 'never']);
const NEGATORS = new Set(['not', "don't", 'dont', 'never', 'no', "isn't", "wasn't", 'hardly']);

/** Lexicon sentiment of the user's words: counts positive/negative words, flipping after a negator. */
export function lexiconSentiment(texts: readonly string[]): CallAnalysis['user_sentiment'] {
  let score = 0;
  let hits = 0;
  for (const t of texts) {
    const ws = t.toLowerCase().replace(/[^a-z'\s]/g, ' ').split(/\s+/).filter(Boolean);
    // A negator flips the next sentiment word within two words ("not very good"), once.
    let negateUntil = -1;
    ws.forEach((w, i) => {
      if (NEGATORS.has(w)) {
        negateUntil = i + 2;
        return;
      }
      const sign = POSITIVE.has(w) ? 1 : NEGATIVE.has(w) ? -1 : 0;
      if (!sign) return;
      const negated = i <= negateUntil;
      negateUntil = -1;
      score += negated ? -sign : sign;
      hits++;
    });
  }
  if (texts.every((t) => !t.trim())) return 'Unknown';
  if (hits === 0 || score === 0) return 'Neutral';
  return score > 0 ? 'Positive' : 'Negative';
}

/**
 * Whether the call achieved its goal, without an LLM: the engine ended the conversation on a
 * success ending (an end node marked `success: true`, an unmarked end node not reached through an
 * else edge, or end_call with `goal_achieved: true`), and the call did not end on an error. A call
 * the engine never ended (the user hung up first, silence, the time limit, a shutdown) is not a
 * success. docs/voice-pipeline.md (Post-call analysis) states the rule.
 */
export function embeddedSuccess(input: Pick<AnalysisInput, 'disconnectionReason' | 'reachedEnd' | 'ending'>): boolean {
  const reason = input.disconnectionReason ?? 'unknown';
  if (reason.startsWith('error')) return false;
  return input.ending ? input.ending.successful : input.reachedEnd === true;
}

/**
 * Embedded analysis, no LLM: an extractive summary (the agent's first line, the user's longest
 * utterances, how the call ended), lexicon sentiment over the user's words, and success as
 * embeddedSuccess() says.
 */
export function embeddedAnalysis(input: AnalysisInput): CallAnalysis {
  const user = input.transcript.filter((u) => u.role === 'user' && u.text.trim());
  const agent = input.transcript.filter((u) => u.role === 'agent' && u.text.trim());
  const reason = input.disconnectionReason ?? 'unknown';
  const successful = embeddedSuccess(input);
  const parts: string[] = [];
  if (input.transcript.length === 0) {
    parts.push('The call ended before anything was said.');
  } else {
    parts.push(`Call with ${agent.length} agent and ${user.length} user utterance${user.length === 1 ? '' : 's'}.`);
    if (agent[0]) parts.push(`The agent opened with: "${clip(agent[0].text, 120)}".`);
    const longest = [...user].sort((a, b) => b.text.length - a.text.length).slice(0, 2).sort((a, b) => a.startMs - b.startMs);
    if (longest.length) parts.push(`The user said: ${longest.map((u) => `"${clip(u.text, 120)}"`).join('; ')}.`);
    const cut = agent.filter((u) => u.cutOff).length;
    if (cut) parts.push(`The user interrupted the agent ${cut} time${cut === 1 ? '' : 's'}.`);
  }
  const ending = input.ending;
  if (successful) parts.push(ending ? `The agent completed the conversation (${ending.detail}).` : 'The agent completed the conversation.');
  else if (ending && !reason.startsWith('error')) parts.push(`The conversation ended on a path that is not a success: ${ending.detail} (${reason}).`);
  else parts.push(`The call ended without completing the conversation (${reason}).`);
  return {
    call_summary: parts.join(' '),
    call_successful: successful,
    user_sentiment: lexiconSentiment(user.map((u) => u.text)),
    ...customData(input.customFields, undefined),
  };
}

/** Longest string value kept for a custom field, characters. */
const MAX_CUSTOM_STRING = 2_000;
/** Longest call_summary kept from the LLM, characters. */
const MAX_SUMMARY_CHARS = 2_000;

/**
 * One value the LLM gave for a custom field, checked against its declared type: a string (trimmed,
 * non-empty), one of an enum's choices (matched case-insensitively, answered as declared), a
 * boolean (or "true"/"false"), a finite number (or a numeric string). Anything else is null.
 */
export function customValue(field: PostCallAnalysisField, value: unknown): CustomAnalysisValue {
  const text = typeof value === 'string' ? value.trim() : undefined;
  switch (field.type) {
    case 'string':
      return text ? text.slice(0, MAX_CUSTOM_STRING) : null;
    case 'enum':
      return text === undefined ? null : ((field.choices ?? []).find((c) => c.toLowerCase() === text.toLowerCase()) ?? null);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      return text?.toLowerCase() === 'true' ? true : text?.toLowerCase() === 'false' ? false : null;
    case 'number': {
      const n = typeof value === 'number' ? value : text ? Number(text) : NaN;
      return Number.isFinite(n) ? n : null;
    }
  }
}

/** `custom_analysis_data` from the LLM's object (undefined: every field null); nothing without fields. */
function customData(fields: readonly PostCallAnalysisField[] | undefined, answer: unknown): Pick<CallAnalysis, 'custom_analysis_data'> {
  if (!fields || fields.length === 0) return {};
  const given = typeof answer === 'object' && answer !== null && !Array.isArray(answer) ? (answer as Record<string, unknown>) : {};
  return { custom_analysis_data: Object.fromEntries(fields.map((f) => [f.name, customValue(f, Object.hasOwn(given, f.name) ? given[f.name] : undefined)])) };
}

/** The custom fields as the LLM is asked for them, one line each. */
function describeFields(fields: readonly PostCallAnalysisField[]): string {
  return fields
    .map((f) => {
      const type = f.type === 'enum' ? `one of ${(f.choices ?? []).map((c) => JSON.stringify(c)).join(', ')}` : f.type;
      const examples = f.examples?.length ? ` Examples: ${f.examples.map((e) => JSON.stringify(e)).join(', ')}.` : '';
      return `- ${JSON.stringify(f.name)} (${type} or null): ${f.description}${examples}`;
    })
    .join('\n');
}

/**
 * Post-call analysis from the LLM when given one, else (or on failure, or once `signal` has
 * aborted) the embedded method. Never blank.
 */
export async function analyzeCall(input: AnalysisInput): Promise<CallAnalysis> {
  const fallback = embeddedAnalysis(input);
  if (!input.llm || input.transcript.length === 0 || input.signal?.aborted) return fallback;
  const fields = input.customFields ?? [];
  const custom = fields.length
    ? ', "custom_analysis_data": an object with these keys, each the value found in the call or null when the call does not say:\n' + describeFields(fields)
    : '';
  try {
    const answer = await chatText(input.llm, {
      messages: [
        {
          role: 'system',
          content:
            'You analyse finished phone calls. Answer with a JSON object: {"call_summary": string (2-3 sentences), "call_successful": boolean (did the agent achieve the goal of the call), "user_sentiment": "Positive"|"Negative"|"Neutral"|"Unknown"' +
            `${custom}}.`,
        },
        {
          role: 'user',
          content:
            `Disconnection reason: ${input.disconnectionReason ?? 'unknown'}\n` +
            `How the agent ended the conversation: ${input.ending?.detail ?? 'it did not'}\n\nTranscript:\n${formatTranscript(input.transcript)}`,
        },
      ],
      json: true,
      temperature: 0,
      ...(input.signal ? { signal: input.signal } : {}),
    });
    const m = /\{[\s\S]*\}/.exec(answer);
    const json = parseBoundedJson(m ? m[0] : answer);
    if (!json.ok || typeof json.value !== 'object' || json.value === null) return fallback;
    const parsed = json.value as Partial<Record<keyof CallAnalysis, unknown>>;
    const sentiments = ['Positive', 'Negative', 'Neutral', 'Unknown'] as const;
    return {
      call_summary: typeof parsed.call_summary === 'string' && parsed.call_summary.trim() ? clip(parsed.call_summary.trim(), MAX_SUMMARY_CHARS) : fallback.call_summary,
      // An end node the flow's author marked answers for itself; otherwise the LLM judges.
      call_successful: input.ending?.marked ? input.ending.successful : typeof parsed.call_successful === 'boolean' ? parsed.call_successful : fallback.call_successful,
      user_sentiment: sentiments.find((s) => s === parsed.user_sentiment) ?? fallback.user_sentiment,
      ...customData(fields, parsed.custom_analysis_data),
    };
  } catch {
    return fallback;
  }
}

function clip(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n - 1).trimEnd()}…`;
}
