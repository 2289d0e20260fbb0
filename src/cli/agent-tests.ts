/**
 * `cli test`: an agent's test cases in CI. With `--agent`, a run on a server through the API
 * (create-test-run, then get-test-run until it is complete). With `--file`, "agents as code": a
 * YAML file that defines the flow, the agent and its cases, played with no server and no network,
 * on an in-memory store and the embedded engines. Either way, the run's result, a JUnit report on
 * request, and a failing exit status when a case failed.
 */
import fs from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import type { Config } from '../config/config.ts';
import type { TestRun } from '../domain/agent-test.ts';
import { isAppError } from '../domain/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { createRuntime } from '../runtime.ts';
import { openStore } from '../storage/store.ts';

/** Largest test file read, bytes. */
export const MAX_TEST_FILE_BYTES = 4 * 1024 * 1024;
/** How often a server's run is asked for, ms. */
const POLL_MS = 250;

export class AgentTestsError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** Runs an agent's cases on a server; resolves with the complete run. */
export async function runOnServer(o: { baseUrl: string; apiKey: string; agentId: string; agentVersion?: number; timeoutMs: number }): Promise<TestRun> {
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(new URL(path, o.baseUrl), {
      method,
      headers: { authorization: `Bearer ${o.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const err = json as { code?: string; message?: string } | undefined;
      throw new AgentTestsError(err?.code ?? `http_${response.status}`, err?.message ?? `the server answered ${response.status}`);
    }
    return json;
  };
  const started = (await call('POST', '/create-test-run', { agent_id: o.agentId, ...(o.agentVersion === undefined ? {} : { agent_version: o.agentVersion }) })) as { test_run_id: string };
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    const run = (await call('GET', `/get-test-run/${encodeURIComponent(started.test_run_id)}`)) as TestRun;
    if (run.status === 'complete') return run;
    if (Date.now() > deadline) throw new AgentTestsError('timeout', `test run ${started.test_run_id} was not complete after ${o.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** What a test file holds: the flow, the agent's settings, its cases (without `agent_id`). */
interface TestFile {
  conversation_flow: unknown;
  agent?: Record<string, unknown>;
  cases: Array<Record<string, unknown>>;
}

function readTestFile(text: string, file: string): TestFile {
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new AgentTestsError('invalid_file', `${file} is not valid YAML: ${error instanceof Error ? error.message : 'parse error'}`);
  }
  const problem = (what: string) => new AgentTestsError('invalid_file', `${file}: ${what}`);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw problem('must be a mapping with conversation_flow, agent and cases');
  const d = doc as Record<string, unknown>;
  for (const key of Object.keys(d)) if (!['conversation_flow', 'agent', 'cases'].includes(key)) throw problem(`unknown field ${key} (conversation_flow, agent, cases)`);
  if (d['conversation_flow'] === null || typeof d['conversation_flow'] !== 'object') throw problem('conversation_flow: a conversation flow is required');
  if (d['agent'] !== undefined && (d['agent'] === null || typeof d['agent'] !== 'object' || Array.isArray(d['agent']))) throw problem('agent: must be a mapping of agent settings');
  if (!Array.isArray(d['cases']) || d['cases'].length === 0) throw problem('cases: at least one test case is required');
  for (const [i, c] of d['cases'].entries()) if (c === null || typeof c !== 'object' || Array.isArray(c)) throw problem(`cases.${i}: must be a mapping`);
  return d as unknown as TestFile;
}

/**
 * Plays a test file offline: an in-memory SQLite store, one account, the flow, the agent and its
 * cases created through the services (so they are checked as the API checks them), one run.
 */
export async function runFile(file: string, config: Config, logger: Logger): Promise<TestRun> {
  const handle = await fs.open(file).catch((error: unknown) => {
    throw new AgentTestsError('invalid_file', `cannot read ${file}: ${error instanceof Error ? error.message : 'error'}`);
  });
  let text: string;
  try {
    if ((await handle.stat()).size > MAX_TEST_FILE_BYTES) throw new AgentTestsError('invalid_file', `${file} is larger than ${MAX_TEST_FILE_BYTES} bytes`);
    text = await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
  const spec = readTestFile(text, file);
  const store = await openStore({ databaseUrl: null, dataDir: config.dataDir, sqliteFile: ':memory:' });
  const runtime = await createRuntime({ ...config, databaseUrl: null }, { logger, store });
  const { services } = runtime;
  const at = async <T>(where: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (isAppError(error)) throw new AgentTestsError(error.code, `${file}: ${where}: ${error.message}`);
      throw error;
    }
  };
  try {
    const account = await services.accounts.createAccount({ trialEndsAt: null, concurrencyLimit: null });
    const accountId = account.account_id;
    const flow = await at('conversation_flow', () => services.agents.createFlow(accountId, spec.conversation_flow as never));
    const agent = await at('agent', () =>
      services.agents.createAgent(accountId, { ...spec.agent, response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } } as never),
    );
    const caseIds: string[] = [];
    for (const [i, c] of spec.cases.entries()) {
      const created = await at(`cases.${i}`, () => services.tests.createCase(accountId, { ...c, agent_id: agent.agent_id } as never));
      caseIds.push(created.test_case_id);
    }
    // The cases in the file's order: the report lists them as the file does.
    const started = await services.tests.createRun(accountId, { agent_id: agent.agent_id, test_case_ids: caseIds });
    await services.tests.settled(started.test_run_id);
    return await services.tests.getRun(accountId, started.test_run_id);
  } finally {
    await runtime.close();
  }
}

/** A run in a few lines for a person: a line per case, its first failing assertion, the counts. */
export function runText(run: TestRun): string {
  const lines = run.results.map((r) => {
    const failed = r.assertions.find((a) => !a.passed && a.skipped !== true);
    const why = r.error ?? (failed ? `${failed.type}: expected ${JSON.stringify(failed.expected)}, got ${JSON.stringify(failed.actual)}` : '');
    return `${r.passed ? 'PASS' : 'FAIL'}  ${r.name}${why ? `\n      ${why}` : ''}`;
  });
  lines.push(`${run.passed} passed, ${run.failed} failed`);
  return lines.join('\n');
}
