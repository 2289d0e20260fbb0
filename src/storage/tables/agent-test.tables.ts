import type { Generated } from 'kysely';
import type { TestCase, TestCaseResult, TestRunStatus } from '../../domain/agent-test.ts';
import type { JsonText } from '../json-column.ts';

/** What a case's `definition` column holds: the case's fields but its ids and timestamps. */
export type TestCaseDefinition = Omit<TestCase, 'test_case_id' | 'agent_id' | 'created_at' | 'last_modification_timestamp'>;

/** The `test_cases` table (migration 0017): an agent's simulated calls and their assertions. */
export interface TestCaseTable {
  test_case_id: string;
  account_id: string;
  agent_id: string;
  definition: JsonText<TestCaseDefinition>;
  created_at: number;
  updated_at: number;
}

/** The `test_runs` table (migration 0017): a run's status, counts and per-case results. */
export interface TestRunTable {
  test_run_id: string;
  account_id: string;
  agent_id: string;
  agent_version: number | null;
  status: TestRunStatus;
  test_case_ids: JsonText<string[]>;
  passed: number;
  failed: number;
  results: JsonText<TestCaseResult[]>;
  created_at: number;
  finished_at: number | null;
  /** The server playing the run (its id), while it runs. */
  holder: string | null;
  /** The holder renews this while the run plays; a run past it was lost with its server (migration 0022). */
  lease_expires_at: Generated<number>;
}

export interface AgentTestTables {
  test_cases: TestCaseTable;
  test_runs: TestRunTable;
}
