import {
  type CaseProviders,
  type TestCase,
  type TestCaseCreate,
  type TestCaseResult,
  type TestCaseUpdate,
  type TestRun,
  type TestRunCreate,
  TestCaseCreateBody,
  TestCaseUpdateBody,
  TestRunCreateBody,
  patternProblem,
} from '../domain/agent-test.ts';
import { errors } from '../domain/errors.ts';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { AgentTestRepository } from '../storage/agent-test.repository.ts';
import type { Store } from '../storage/store.ts';
import type { AgentService, ResolvedAgentVersion } from './agent.service.ts';
import type { EventOutbox } from './events.ts';
import { check } from './lead.service.ts';

/**
 * Plays one case on an agent version (implemented in src/media/simulation/: the engines, the
 * mocks, the assertions). Never rejects: a case that cannot be played is a result with `error`.
 */
export interface CaseRunner {
  run(accountId: string, testCase: TestCase, agent: ResolvedAgentVersion, signal: AbortSignal): Promise<TestCaseResult>;
}

export interface AgentTestServiceDeps {
  store: Store;
  tests: AgentTestRepository;
  agents: AgentService;
  outbox: EventOutbox;
  clock: Clock;
  runner: CaseRunner;
  /** What is wrong with a case's `providers` on this server ("providers.stt: ..."), or undefined when they can run. */
  checkProviders?: (providers: CaseProviders) => string | undefined;
  /** Cases of one run played at once; default 8. */
  concurrency?: number;
  /** This server (the holder of the runs it plays) and how long a run's lease lasts unrenewed, ms. */
  serverId: string;
  leaseTtlMs: number;
}

/** Runs of lost servers finished per recovery pass. */
const RECOVERY_BATCH = 100;

/** The error of each case of a run whose server was lost before it finished. */
export const RUN_LOST_ERROR = 'the server playing this test run was lost before the case finished; run it again';

/** Most runs `list-test-runs` answers. */
const RUN_HISTORY_MAX = 100;

/**
 * Agent tests: an account's test cases (CRUD, checked against their agent) and test runs, which
 * answer at once and play their cases in the background; a run's end is recorded with its
 * `test_run.finished` event in one transaction.
 */
export class AgentTestService {
  readonly #d: AgentTestServiceDeps;
  /** Runs playing in this process, by id: awaited by `settled` and `close`. */
  readonly #running = new Map<string, Promise<void>>();
  readonly #closing = new AbortController();

  constructor(deps: AgentTestServiceDeps) {
    this.#d = deps;
  }

  // --- cases --------------------------------------------------------------------------------

  async createCase(accountId: string, input: TestCaseCreate): Promise<TestCase> {
    check(TestCaseCreateBody, input);
    checkPatterns(input.assertions);
    this.#checkProviders(input.providers);
    await this.#d.agents.resolveVersion(accountId, input.agent_id, input.agent_version);
    const now = this.#d.clock.now();
    const testCase: TestCase = {
      test_case_id: newId('testCase'),
      name: input.name ?? 'Test case',
      agent_id: input.agent_id,
      ...(input.agent_version !== undefined ? { agent_version: input.agent_version } : {}),
      mode: input.mode ?? 'text',
      caller: input.caller,
      dynamic_variables: input.dynamic_variables ?? {},
      metadata: input.metadata ?? {},
      tool_mocks: input.tool_mocks ?? {},
      ...(input.allow_unmocked_functions !== undefined ? { allow_unmocked_functions: input.allow_unmocked_functions } : {}),
      ...(input.caller_voice_id !== undefined ? { caller_voice_id: input.caller_voice_id } : {}),
      ...(input.providers !== undefined ? { providers: input.providers } : {}),
      assertions: input.assertions,
      created_at: now,
      last_modification_timestamp: now,
    };
    await this.#d.tests.insertCase(accountId, testCase);
    return testCase;
  }

  async getCase(accountId: string, id: string): Promise<TestCase> {
    const found = await this.#d.tests.findCase(accountId, id);
    if (!found) throw errors.testCaseNotFound(id);
    return found;
  }

  /** The account's cases (one agent's with `agentId`), oldest first. */
  async listCases(accountId: string, agentId?: string): Promise<TestCase[]> {
    return this.#d.tests.listCases(accountId, agentId);
  }

  /** Fields given replace the stored ones (`tool_mocks`, `assertions` and the caller as wholes). */
  async updateCase(accountId: string, id: string, changes: TestCaseUpdate): Promise<TestCase> {
    check(TestCaseUpdateBody, changes);
    if (changes.assertions) checkPatterns(changes.assertions);
    this.#checkProviders(changes.providers);
    const current = await this.getCase(accountId, id);
    if (changes.agent_version !== undefined) await this.#d.agents.resolveVersion(accountId, current.agent_id, changes.agent_version);
    const updated: TestCase = { ...current, ...changes, last_modification_timestamp: this.#d.clock.now() };
    if (!(await this.#d.tests.updateCase(accountId, updated))) throw errors.testCaseNotFound(id);
    return updated;
  }

  /** A provider a case names must be one this server can run (issue 28). */
  #checkProviders(providers: CaseProviders | undefined): void {
    const problem = providers && this.#d.checkProviders?.(providers);
    if (problem) throw errors.invalidRequest(problem);
  }

  async deleteCase(accountId: string, id: string): Promise<void> {
    if (!(await this.#d.tests.deleteCase(accountId, id))) throw errors.testCaseNotFound(id);
  }

  // --- runs ---------------------------------------------------------------------------------

  /**
   * Starts a run of the agent's cases (all of them, or `test_case_ids`) and answers at once. The
   * run plays on `agent_version`; without it each case on its own pinned version, else the latest.
   */
  async createRun(accountId: string, input: TestRunCreate): Promise<{ test_run_id: string; status: 'running' }> {
    check(TestRunCreateBody, input);
    const latest = await this.#d.agents.resolveVersion(accountId, input.agent_id, input.agent_version);
    const cases = await this.#casesOfRun(accountId, input);
    const run: TestRun = {
      test_run_id: newId('testRun'),
      agent_id: input.agent_id,
      agent_version: input.agent_version ?? null,
      status: 'running',
      test_case_ids: cases.map((c) => c.test_case_id),
      passed: 0,
      failed: 0,
      results: [],
      created_at: this.#d.clock.now(),
      finished_at: null,
    };
    await this.#d.tests.insertRun(accountId, run, { holder: this.#d.serverId, expiresAt: run.created_at + this.#d.leaseTtlMs });
    const playing = this.#play(accountId, run, cases, latest).finally(() => this.#running.delete(run.test_run_id));
    this.#running.set(run.test_run_id, playing);
    return { test_run_id: run.test_run_id, status: 'running' };
  }

  async getRun(accountId: string, id: string): Promise<TestRun> {
    const found = await this.#d.tests.findRun(accountId, id);
    if (!found) throw errors.testRunNotFound(id);
    return found;
  }

  /** An agent's runs, newest first, without their results. */
  async listRuns(accountId: string, agentId: string): Promise<TestRun[]> {
    return this.#d.tests.listRuns(accountId, agentId, RUN_HISTORY_MAX);
  }

  /** Resolves once the run (started by this process) has finished; at once for any other. */
  async settled(runId: string): Promise<void> {
    await this.#running.get(runId);
  }

  /** Extends the leases of the runs this server is playing (every third of their TTL, like calls). */
  async renewLeases(): Promise<void> {
    await this.#d.tests.renewLeases(this.#d.serverId, [...this.#running.keys()], this.#d.clock.now() + this.#d.leaseTtlMs);
  }

  /**
   * Finishes the runs whose lease lapsed (their server was lost; on SQLite, any a previous process
   * left): each case that had not reported is failed with RUN_LOST_ERROR, and `test_run.finished`
   * is sent as for any run. Returns how many runs it finished.
   */
  async recoverLapsed(): Promise<number> {
    const lapsed = await this.#d.tests.lapsedRuns(this.#d.clock.now(), RECOVERY_BATCH);
    let finished = 0;
    for (const run of lapsed) {
      if (this.#running.has(run.test_run_id)) continue; // ours, and still playing: renewal was late
      const cases = new Map((await this.#d.tests.listCases(run.account_id, run.agent_id)).map((c) => [c.test_case_id, c]));
      const results = run.test_case_ids.map((id) => {
        const testCase = cases.get(id);
        const played = testCase ?? { test_case_id: id, name: '(deleted test case)', mode: 'text' as const };
        return unplayable(played, run.agent_version ?? testCase?.agent_version ?? 0, RUN_LOST_ERROR);
      });
      if (await this.#finish(run.account_id, run, results)) finished++;
    }
    return finished;
  }

  /** Stops the runs in progress (their cases end as errors, the runs are recorded) and waits for them; idempotent. */
  async close(): Promise<void> {
    this.#closing.abort(new Error('the server is shutting down'));
    await Promise.all(this.#running.values());
  }

  async #casesOfRun(accountId: string, input: TestRunCreate): Promise<TestCase[]> {
    if (!input.test_case_ids) {
      const all = await this.#d.tests.listCases(accountId, input.agent_id);
      if (all.length === 0) throw errors.invalidRequest(`agent_id: agent ${input.agent_id} has no test cases`);
      return all;
    }
    const cases: TestCase[] = [];
    for (const [i, id] of input.test_case_ids.entries()) {
      const found = await this.#d.tests.findCase(accountId, id);
      if (!found) throw errors.invalidRequest(`test_case_ids.${i}: no test case ${id} under this API key`);
      if (found.agent_id !== input.agent_id) throw errors.invalidRequest(`test_case_ids.${i}: test case ${id} belongs to another agent`);
      cases.push(found);
    }
    return cases;
  }

  async #play(accountId: string, run: TestRun, cases: TestCase[], latest: ResolvedAgentVersion): Promise<void> {
    const results: TestCaseResult[] = new Array<TestCaseResult>(cases.length);
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const index = next++;
        const testCase = cases[index]!;
        results[index] = await this.#playCase(accountId, run, testCase, latest);
      }
    };
    const workers = Math.max(1, Math.min(this.#d.concurrency ?? 8, cases.length));
    await Promise.all(Array.from({ length: workers }, worker));
    await this.#finish(accountId, run, results);
  }

  /** Records the run's outcome with its `test_run.finished` event, in one transaction; false when it was finished already or is gone. */
  async #finish(accountId: string, run: TestRun, results: TestCaseResult[]): Promise<boolean> {
    const passed = results.filter((r) => r.passed).length;
    const finishedAt = this.#d.clock.now();
    return this.#d.store.transaction(async (tx) => {
      const recorded = await this.#d.tests.finishRun(run.test_run_id, { status: 'complete', passed, failed: results.length - passed, results, finishedAt }, tx);
      if (!recorded) return false;
      await this.#d.outbox.record(tx, {
        accountId,
        kind: 'test_run.finished',
        data: {
          test_run_id: run.test_run_id,
          agent_id: run.agent_id,
          agent_version: run.agent_version,
          status: 'complete',
          passed,
          failed: results.length - passed,
          results: results.map((r) => ({ test_case_id: r.test_case_id, name: r.name, passed: r.passed, error: r.error })),
          created_at: run.created_at,
          finished_at: finishedAt,
        },
      });
      return true;
    });
  }

  async #playCase(accountId: string, run: TestRun, testCase: TestCase, latest: ResolvedAgentVersion): Promise<TestCaseResult> {
    let agent = latest;
    try {
      if (run.agent_version === null && testCase.agent_version !== undefined && testCase.agent_version !== latest.version) {
        agent = await this.#d.agents.resolveVersion(accountId, testCase.agent_id, testCase.agent_version);
      }
    } catch (error) {
      return unplayable(testCase, testCase.agent_version ?? latest.version, error instanceof Error ? error.message : 'the agent version cannot be read');
    }
    return this.#d.runner.run(accountId, testCase, agent, this.#closing.signal);
  }
}

/** Refuses a `transcript_matches` pattern that does not compile or could run for very long, naming the field. */
function checkPatterns(assertions: TestCaseCreate['assertions']): void {
  for (const [i, a] of assertions.entries()) {
    if (a.type !== 'transcript_matches') continue;
    const problem = patternProblem(a.pattern, a.flags);
    if (problem) throw errors.invalidRequest(`assertions.${i}.pattern ${problem}`);
  }
}

/** The result of a case that could not be played at all. */
export function unplayable(testCase: Pick<TestCase, 'test_case_id' | 'name' | 'mode'>, agentVersion: number, error: string): TestCaseResult {
  return {
    test_case_id: testCase.test_case_id,
    name: testCase.name,
    mode: testCase.mode,
    agent_version: agentVersion,
    passed: false,
    error,
    assertions: [],
    transcript: [],
    node_path: [],
    tool_calls: [],
    variables: {},
    disconnection_reason: 'error_unknown',
    call_successful: false,
    leads: [],
    tickets: [],
    latency: { e2e_p50_ms: null, e2e_p90_ms: null, values_ms: [] },
    duration_ms: 0,
  };
}
