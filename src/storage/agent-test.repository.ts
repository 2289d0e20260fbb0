import type { Selectable } from 'kysely';
import type { TestCase, TestCaseResult, TestRun, TestRunStatus } from '../domain/agent-test.ts';
import { decodeJson, encodeJson } from './json-column.ts';
import type { Executor } from './store.ts';
import type { TestCaseDefinition, TestCaseTable, TestRunTable } from './tables/agent-test.tables.ts';

/** Most cases or runs one list answers. */
export const AGENT_TEST_LIST_MAX = 1_000;

const toCase = (row: TestCaseTable): TestCase => ({
  test_case_id: row.test_case_id,
  agent_id: row.agent_id,
  ...decodeJson(row.definition),
  created_at: Number(row.created_at),
  last_modification_timestamp: Number(row.updated_at),
});

const toRun = (row: Selectable<TestRunTable>): TestRun => ({
  test_run_id: row.test_run_id,
  agent_id: row.agent_id,
  agent_version: row.agent_version === null ? null : Number(row.agent_version),
  status: row.status,
  test_case_ids: decodeJson(row.test_case_ids),
  passed: Number(row.passed),
  failed: Number(row.failed),
  results: decodeJson(row.results),
  created_at: Number(row.created_at),
  finished_at: row.finished_at === null ? null : Number(row.finished_at),
});

/** Test cases and test runs of an account (agent tests, issue 28); the only code that encodes and decodes them. */
export class AgentTestRepository {
  readonly #db: Executor;
  constructor(db: Executor) {
    this.#db = db;
  }

  async insertCase(accountId: string, testCase: TestCase, db: Executor = this.#db): Promise<void> {
    const { test_case_id, agent_id, created_at, last_modification_timestamp, ...definition } = testCase;
    await db
      .insertInto('test_cases')
      .values({ test_case_id, account_id: accountId, agent_id, definition: encodeJson<TestCaseDefinition>(definition), created_at, updated_at: last_modification_timestamp })
      .execute();
  }

  async findCase(accountId: string, id: string, db: Executor = this.#db): Promise<TestCase | undefined> {
    const row = await db.selectFrom('test_cases').selectAll().where('test_case_id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && toCase(row);
  }

  /** The account's cases, oldest first; one agent's when `agentId` is given. */
  async listCases(accountId: string, agentId?: string, db: Executor = this.#db): Promise<TestCase[]> {
    let query = db.selectFrom('test_cases').selectAll().where('account_id', '=', accountId);
    if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
    const rows = await query.orderBy('test_case_id').limit(AGENT_TEST_LIST_MAX).execute();
    return rows.map(toCase);
  }

  async updateCase(accountId: string, testCase: TestCase, db: Executor = this.#db): Promise<boolean> {
    const { test_case_id, agent_id: _agent, created_at: _created, last_modification_timestamp, ...definition } = testCase;
    const result = await db
      .updateTable('test_cases')
      .set({ definition: encodeJson<TestCaseDefinition>(definition), updated_at: last_modification_timestamp })
      .where('test_case_id', '=', test_case_id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async deleteCase(accountId: string, id: string, db: Executor = this.#db): Promise<boolean> {
    const result = await db.deleteFrom('test_cases').where('test_case_id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Records a run starting, held by `lease.holder` until `lease.expiresAt` (renewed by renewLeases). */
  async insertRun(accountId: string, run: TestRun, lease: { holder: string; expiresAt: number }, db: Executor = this.#db): Promise<void> {
    await db
      .insertInto('test_runs')
      .values({
        test_run_id: run.test_run_id,
        account_id: accountId,
        agent_id: run.agent_id,
        agent_version: run.agent_version,
        status: run.status,
        test_case_ids: encodeJson(run.test_case_ids),
        passed: run.passed,
        failed: run.failed,
        results: encodeJson(run.results),
        created_at: run.created_at,
        finished_at: run.finished_at,
        holder: lease.holder,
        lease_expires_at: lease.expiresAt,
      })
      .execute();
  }

  /** Extends the leases of the holder's runs still running. */
  async renewLeases(holder: string, runIds: readonly string[], expiresAt: number, db: Executor = this.#db): Promise<void> {
    if (runIds.length === 0) return;
    await db.updateTable('test_runs').set({ lease_expires_at: expiresAt }).where('holder', '=', holder).where('status', '=', 'running').where('test_run_id', 'in', [...runIds]).execute();
  }

  /** Runs still running whose lease lapsed before `now` (their server was lost), oldest first, with their account. */
  async lapsedRuns(now: number, limit: number, db: Executor = this.#db): Promise<Array<TestRun & { account_id: string }>> {
    const rows = await db.selectFrom('test_runs').selectAll().where('status', '=', 'running').where('lease_expires_at', '<', now).orderBy('test_run_id').limit(limit).execute();
    return rows.map((row) => ({ ...toRun(row), account_id: row.account_id }));
  }

  /** Records a run's outcome, once; false when the run is gone (its account or agent was deleted meanwhile) or already finished. */
  async finishRun(
    runId: string,
    outcome: { status: TestRunStatus; passed: number; failed: number; results: TestCaseResult[]; finishedAt: number },
    db: Executor = this.#db,
  ): Promise<boolean> {
    const result = await db
      .updateTable('test_runs')
      .set({ status: outcome.status, passed: outcome.passed, failed: outcome.failed, results: encodeJson(outcome.results), finished_at: outcome.finishedAt, holder: null })
      .where('test_run_id', '=', runId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async findRun(accountId: string, id: string, db: Executor = this.#db): Promise<TestRun | undefined> {
    const row = await db.selectFrom('test_runs').selectAll().where('test_run_id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && toRun(row);
  }

  /** An agent's runs, newest first, without their results (the history). */
  async listRuns(accountId: string, agentId: string, limit: number, db: Executor = this.#db): Promise<TestRun[]> {
    const rows = await db
      .selectFrom('test_runs')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('agent_id', '=', agentId)
      .orderBy('test_run_id', 'desc')
      .limit(Math.min(limit, AGENT_TEST_LIST_MAX))
      .execute();
    return rows.map((row) => ({ ...toRun(row), results: [] }));
  }
}
