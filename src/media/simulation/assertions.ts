/**
 * Judges a simulated call's record against a case's assertions (docs/testing-agents.md lists the
 * kinds). Each result says what was expected and what happened. `llm_judge` asks the configured
 * LLM; without one it is skipped, which never counts as a pass.
 */
import type { Assertion, AssertionResult, SimulatedToolCall, SimulatedUtterance } from '../../domain/agent-test.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { type LlmProvider, chatText } from '../../providers/llm.ts';
import { summarizeLatency } from '../../voice/index.ts';

/** What a simulated call left, as the assertions read it. */
export interface SimulatedRecord {
  transcript: readonly SimulatedUtterance[];
  nodePath: readonly string[];
  toolCalls: readonly SimulatedToolCall[];
  /** Dynamic variables, overlaid by those the engine resolved or extracted. */
  variables: Readonly<Record<string, string>>;
  disconnectionReason: string;
  callSuccessful: boolean;
  /** End-to-end latency of each agent reply, ms. */
  latenciesMs: readonly number[];
}

/** Longest answer read from the judging LLM, characters. */
const JUDGE_MAX_CHARS = 4_000;

/** Whether `subset`'s fields all equal `whole`'s (deeply; arrays as wholes). */
export function containsSubset(whole: unknown, subset: unknown): boolean {
  if (subset === null || typeof subset !== 'object' || Array.isArray(subset)) return JSON.stringify(whole) === JSON.stringify(subset);
  if (whole === null || typeof whole !== 'object' || Array.isArray(whole)) return false;
  return Object.entries(subset).every(([k, v]) => Object.hasOwn(whole, k) && containsSubset((whole as Record<string, unknown>)[k], v));
}

/** Whether `wanted` occurs in `path` in order (not necessarily next to each other). */
function isSubsequence(path: readonly string[], wanted: readonly string[]): boolean {
  let at = 0;
  for (const node of path) if (node === wanted[at]) at++;
  return at === wanted.length;
}

const linesOf = (r: SimulatedRecord, role: 'agent' | 'user' | undefined) => r.transcript.filter((u) => role === undefined || u.role === role).map((u) => u.content);

/** Judges one assertion that needs no LLM. */
export function judge(a: Exclude<Assertion, { type: 'llm_judge' }>, r: SimulatedRecord): AssertionResult {
  const result = (passed: boolean, expected: unknown, actual: unknown): AssertionResult => ({ type: a.type, passed, expected, actual });
  switch (a.type) {
    case 'node_reached':
      return result(r.nodePath.includes(a.node_id), a.node_id, [...r.nodePath]);
    case 'node_path':
      return result(isSubsequence(r.nodePath, a.node_ids), a.node_ids, [...r.nodePath]);
    case 'tool_called': {
      const calls = r.toolCalls.filter((c) => c.name === a.name);
      const passed = calls.some((c) => a.args === undefined || containsSubset(c.arguments, a.args));
      return result(passed, { name: a.name, ...(a.args ? { args: a.args } : {}) }, calls.map((c) => ({ name: c.name, args: c.arguments })));
    }
    case 'tool_not_called': {
      const calls = r.toolCalls.filter((c) => c.name === a.name);
      return result(calls.length === 0, { name: a.name, calls: 0 }, { name: a.name, calls: calls.length });
    }
    case 'variable_equals': {
      const actual = Object.hasOwn(r.variables, a.name) ? r.variables[a.name] : null;
      return result(actual === a.value, { [a.name]: a.value }, { [a.name]: actual });
    }
    case 'transcript_contains': {
      const lines = linesOf(r, a.role);
      const needle = a.text.toLowerCase();
      return result(lines.some((l) => l.toLowerCase().includes(needle)), { role: a.role ?? 'any', text: a.text }, lines);
    }
    case 'transcript_matches': {
      // The pattern was checked when the case was saved (patternProblem): it compiles and cannot backtrack exponentially.
      const re = new RegExp(a.pattern, a.flags);
      const lines = linesOf(r, a.role);
      return result(lines.some((l) => re.test(l)), { role: a.role ?? 'any', pattern: a.pattern, flags: a.flags ?? '' }, lines);
    }
    case 'call_successful':
      return result(r.callSuccessful === a.value, a.value, r.callSuccessful);
    case 'disconnection_reason':
      return result(r.disconnectionReason === a.value, a.value, r.disconnectionReason);
    case 'max_turns': {
      const turns = r.transcript.filter((u) => u.role === 'agent').length;
      return result(turns <= a.value, { at_most: a.value }, turns);
    }
    case 'latency_e2e_p90_below_ms': {
      if (r.latenciesMs.length === 0) return { ...result(false, { below_ms: a.value }, null), detail: 'the agent never replied' };
      const p90 = summarizeLatency(r.latenciesMs).p90;
      return result(p90 < a.value, { below_ms: a.value }, { p90_ms: p90 });
    }
  }
}

/** Asks the LLM whether the call meets `criterion`; skipped without an LLM (never passed). */
export async function judgeWithLlm(criterion: string, r: SimulatedRecord, llm: LlmProvider | undefined, signal: AbortSignal): Promise<AssertionResult> {
  const expected = { criterion };
  if (!llm) return { type: 'llm_judge', passed: false, skipped: true, expected, actual: null, detail: 'no LLM is configured (LLM_BASE_URL): skipped, not passed' };
  const transcript = r.transcript.map((u) => `${u.role === 'agent' ? 'Agent' : 'User'}: ${u.content}`).join('\n');
  try {
    const answer = await chatText(llm, {
      messages: [
        {
          role: 'system',
          content:
            'You judge a phone call between an agent and a caller against one criterion. Answer only with JSON: ' +
            '{"passed": true or false, "reason": "one sentence"}.',
        },
        { role: 'user', content: `Criterion: ${criterion}\n\nTranscript:\n${transcript}` },
      ],
      temperature: 0,
      signal,
    });
    const text = answer.trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
    const parsed = parseBoundedJson(text, { maxChars: JUDGE_MAX_CHARS });
    const verdict = parsed.ok && parsed.value !== null && typeof parsed.value === 'object' ? (parsed.value as Record<string, unknown>) : undefined;
    if (!verdict || typeof verdict['passed'] !== 'boolean') {
      return { type: 'llm_judge', passed: false, expected, actual: null, detail: 'the LLM did not answer with {"passed": boolean}' };
    }
    const reason = typeof verdict['reason'] === 'string' ? verdict['reason'].slice(0, 1000) : '';
    return { type: 'llm_judge', passed: verdict['passed'], expected, actual: { passed: verdict['passed'], reason } };
  } catch (error) {
    return { type: 'llm_judge', passed: false, expected, actual: null, detail: `the LLM failed: ${error instanceof Error ? error.message : 'error'}` };
  }
}

/** Judges every assertion, in order. */
export async function judgeAll(assertions: readonly Assertion[], r: SimulatedRecord, llm: LlmProvider | undefined, signal: AbortSignal): Promise<AssertionResult[]> {
  const out: AssertionResult[] = [];
  for (const a of assertions) out.push(a.type === 'llm_judge' ? await judgeWithLlm(a.criterion, r, llm, signal) : judge(a, r));
  return out;
}
