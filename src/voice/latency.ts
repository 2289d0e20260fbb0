import type { LatencyReport, LatencySummary } from '../domain/call.ts';

/**
 * Latency bookkeeping, all in ms, per agent reply to a user turn:
 * - e2e: end of the user's speech (last voiced frame) to the first agent audio frame sent;
 * - asr: end of the user's speech to the final transcript (includes the endpointing silence);
 * - llm: engine asked to respond to its first text (time to first token);
 * - tts: first sentence handed to synthesis to its first audio;
 * - function: custom-function round trips the reply waited for before its first text (included
 *   in llm and e2e; absent when none delayed it);
 * - context: finding the turn's reference material before the LLM request (a knowledge base,
 *   src/voice/engines/context.ts; included in llm and e2e; absent when no source is configured).
 */
export interface TurnLatency {
  e2eMs: number;
  asrMs: number;
  llmMs: number;
  ttsMs: number;
  functionMs?: number;
  contextMs?: number;
}

export type { LatencySummary };

/** Percentile by linear interpolation between closest ranks; `sorted` ascending, non-empty. */
function percentile(sorted: readonly number[], p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo] ?? 0;
  const b = sorted[hi] ?? a;
  return Math.round((a + (b - a) * (rank - lo)) * 100) / 100;
}

/** Summarises values (ms). An empty list gives zeros with num 0. */
export function summarizeLatency(values: readonly number[]): LatencySummary {
  const v = values.filter((x) => Number.isFinite(x)).map((x) => Math.round(x));
  if (v.length === 0) return { p50: 0, p90: 0, p95: 0, p99: 0, min: 0, max: 0, num: 0, values: [] };
  const sorted = [...v].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: sorted[0] ?? 0,
    max: sorted[sorted.length - 1] ?? 0,
    num: v.length,
    values: v,
  };
}

/**
 * The call object's `latency`: `{ e2e, asr, llm, tts }`, each a LatencySummary, `function_call`
 * (the function round trips that delayed replies) when any did, and `knowledge_base` (finding each
 * turn's reference material) when a source was asked.
 */
export function latencyReport(records: readonly TurnLatency[]): LatencyReport {
  const functions = records.flatMap((r) => (r.functionMs !== undefined ? [r.functionMs] : []));
  const context = records.flatMap((r) => (r.contextMs !== undefined ? [r.contextMs] : []));
  return {
    e2e: summarizeLatency(records.map((r) => r.e2eMs)),
    asr: summarizeLatency(records.map((r) => r.asrMs)),
    llm: summarizeLatency(records.map((r) => r.llmMs)),
    tts: summarizeLatency(records.map((r) => r.ttsMs)),
    ...(functions.length > 0 ? { function_call: summarizeLatency(functions) } : {}),
    ...(context.length > 0 ? { knowledge_base: summarizeLatency(context) } : {}),
  };
}
