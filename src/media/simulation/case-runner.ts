/**
 * Plays agent test cases (the services' CaseRunner): builds the case's engine from the pinned
 * agent version as a call would (src/media/engine-factory.ts), with mocked functions and leads and
 * tickets kept in the run; plays the caller; analyses the call as a real one is analysed; judges
 * the assertions. Nothing reaches the account's calls, lists or webhooks.
 */
import type { TestCase, TestCaseResult } from '../../domain/agent-test.ts';
import type { Call } from '../../domain/call.ts';
import { realScheduler } from '../../lib/scheduler.ts';
import type { LlmProvider } from '../../providers/llm.ts';
import type { CaseRunner } from '../../services/agent-test.service.ts';
import { unplayable } from '../../services/agent-test.service.ts';
import type { ResolvedAgentVersion } from '../../services/agent.service.ts';
import { type FunctionCaller, type LlmSocketOpener, analyzeCall, summarizeLatency } from '../../voice/index.ts';
import { buildEngine, engineNeedsMissingLlm } from '../engine-factory.ts';
import { judgeAll } from './assertions.ts';
import { MockedFunctions, RunArtefacts } from './mocks.ts';
import { caseCallDetails, simulatedCall } from './simulated-call.ts';
import { playTextCall } from './text-call.ts';

/** Longest a case may play before it is ended as an error, ms. */
export const CASE_TIMEOUT_MS = 120_000;

/** A case in audio mode: played by the audio runner (src/media/simulation/audio-call.ts). */
export type AudioCasePlayer = (accountId: string, testCase: TestCase, agent: ResolvedAgentVersion, signal: AbortSignal) => Promise<TestCaseResult>;

export interface SimulationRunnerDeps {
  /** The configured LLM (prompt nodes, service-LLM agents, personas, llm_judge, the analysis); none: those are unavailable. */
  llm: LlmProvider | undefined;
  /** The account's real function caller, for cases that allow unmocked functions; none: they are refused. */
  functions?: (accountId: string, details: () => unknown) => FunctionCaller;
  /** Plays audio-mode cases; none: they end as an error saying so. */
  audio?: AudioCasePlayer;
  /**
   * Custom-LLM agents' sockets, as calls open them (under the webhook destination policy), and the
   * call object their server is sent; none: such agents are not played.
   */
  customLlm?: SimulatedCustomLlm;
}

/** What a simulated call needs to reach a custom LLM's server. */
export interface SimulatedCustomLlm {
  open: LlmSocketOpener;
  callDetails: (call: Call) => unknown;
}

export class SimulationRunner implements CaseRunner {
  readonly #d: SimulationRunnerDeps;

  constructor(deps: SimulationRunnerDeps) {
    this.#d = deps;
  }

  async run(accountId: string, testCase: TestCase, agent: ResolvedAgentVersion, signal: AbortSignal): Promise<TestCaseResult> {
    const caseSignal = AbortSignal.any([signal, AbortSignal.timeout(CASE_TIMEOUT_MS)]);
    try {
      if (testCase.mode === 'audio') {
        if (!this.#d.audio) return unplayable(testCase, agent.version, 'audio mode is not available on this server');
        return await this.#d.audio(accountId, testCase, agent, caseSignal);
      }
      return await this.#text(accountId, testCase, agent, caseSignal);
    } catch (error) {
      return unplayable(testCase, agent.version, caseSignal.aborted ? 'the case was stopped (time limit or shutdown)' : `the simulated call failed: ${error instanceof Error ? error.message : 'error'}`);
    }
  }

  async #text(accountId: string, testCase: TestCase, agent: ResolvedAgentVersion, signal: AbortSignal): Promise<TestCaseResult> {
    const started = performance.now();
    const missing = engineNeedsMissingLlm(agent.engine, this.#d.llm !== undefined);
    if (missing) return unplayable(testCase, agent.version, missing);
    const customLlm = agent.engine.type === 'custom_llm' ? this.#d.customLlm : undefined;
    if (agent.engine.type === 'custom_llm' && !customLlm) return unplayable(testCase, agent.version, 'custom-LLM agents are not played on this server');
    const real = testCase.allow_unmocked_functions ? this.#d.functions?.(accountId, caseCallDetails(testCase, agent)) : undefined;
    const functions = new MockedFunctions(testCase.tool_mocks, real);
    const artefacts = new RunArtefacts();
    // A custom LLM's server is dialled as a call's would be; the first failure it causes ends the call with its reason.
    let failure: string | undefined;
    const call = simulatedCall(accountId, testCase, agent);
    const built = buildEngine({
      engine: agent.engine,
      llm: this.#d.llm,
      tools: artefacts,
      functions,
      variables: () => ({ dynamic: testCase.dynamic_variables }),
      language: agent.config.language,
      ...(customLlm
        ? {
            customLlm: {
              callId: call.call_id,
              open: customLlm.open,
              callDetails: () => customLlm.callDetails(call),
              onFailure: (reason: string) => void (failure ??= reason),
              // Text mode has no turn-taking to interrupt: the server's own speech (agent_interrupt) is not played.
              onUnprompted: () => {},
              onMetadata: () => {},
              scheduler: realScheduler,
            },
          }
        : {}),
    });
    let played;
    try {
      played = await playTextCall(built, testCase.caller, functions, this.#d.llm, signal, customLlm !== undefined);
    } finally {
      built.close?.();
    }
    if (failure) played.disconnectionReason = failure;
    const analysis = await analyzeCall({
      transcript: played.transcript.map((u, i) => ({ role: u.role, text: u.content, startMs: i, endMs: i, ...(u.cut_off ? { cutOff: true } : {}) })),
      disconnectionReason: played.disconnectionReason,
      reachedEnd: played.outcome.reachedEnd,
      ...(played.outcome.ending ? { ending: played.outcome.ending } : {}),
      customFields: agent.config.post_call_analysis_data,
      ...(this.#d.llm ? { llm: this.#d.llm } : {}),
      signal,
    });
    const variables = { ...testCase.dynamic_variables, ...played.outcome.variables };
    const record = {
      transcript: played.transcript,
      nodePath: played.nodePath,
      toolCalls: functions.calls,
      variables,
      disconnectionReason: played.disconnectionReason,
      callSuccessful: analysis.call_successful,
      latenciesMs: played.latenciesMs,
    };
    const assertions = await judgeAll(testCase.assertions, record, this.#d.llm, signal);
    const latency = summarizeLatency(played.latenciesMs);
    return {
      test_case_id: testCase.test_case_id,
      name: testCase.name,
      mode: 'text',
      agent_version: agent.version,
      passed: assertions.every((a) => a.passed || a.skipped === true),
      error: null,
      assertions,
      transcript: played.transcript,
      node_path: played.nodePath,
      tool_calls: functions.calls,
      variables,
      disconnection_reason: played.disconnectionReason,
      call_successful: analysis.call_successful,
      leads: artefacts.leads,
      tickets: artefacts.tickets,
      latency: { e2e_p50_ms: latency.num ? latency.p50 : null, e2e_p90_ms: latency.num ? latency.p90 : null, values_ms: latency.values },
      duration_ms: Math.round(performance.now() - started),
    };
  }
}
