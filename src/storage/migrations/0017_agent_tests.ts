import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * Agent tests (issue 28): test cases (an agent's simulated calls and their assertions, as JSON)
 * and test runs (status, counts and each case's result, as JSON). A run's artefacts (its
 * transcripts, leads and tickets) live in its results, never among the account's calls or lists.
 */
export const agentTests = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('test_cases')
      .addColumn('test_case_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('definition', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('test_cases_agent').on('test_cases').columns(['account_id', 'agent_id', 'test_case_id']).execute();
    await db.schema
      .createTable('test_runs')
      .addColumn('test_run_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('agent_version', 'integer')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('test_case_ids', 'text', (c) => c.notNull())
      .addColumn('passed', 'integer', (c) => c.notNull())
      .addColumn('failed', 'integer', (c) => c.notNull())
      .addColumn('results', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .execute();
    await db.schema.createIndex('test_runs_agent').on('test_runs').columns(['account_id', 'agent_id', 'test_run_id']).execute();
  },
});
