import type { Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration';
import type { Dialect } from '../dialect.ts';
import { foundation } from './0001_foundation.ts';
import { agents } from './0002_agents.ts';
import { calls } from './0003_calls.ts';
import { housekeeping } from './0005_housekeeping.ts';
import { webhooks } from './0004_webhooks.ts';
import { leases } from './0006_leases.ts';
import { limits } from './0007_limits.ts';
import { toolCalls } from './0008_tool_calls.ts';
import { recordings } from './0009_recordings.ts';
import { callMedia } from './0010_call_media.ts';
import { phoneNumbers } from './0011_phone_numbers.ts';
import { phoneCalls } from './0012_phone_calls.ts';
import { agentTests } from './0017_agent_tests.ts';
import { knowledgeBases } from './0018_knowledge_bases.ts';
import { retell } from './0020_retell.ts';
import { knowledgeSearch } from './0021_knowledge_search.ts';
import { testRunLeases } from './0022_test_run_leases.ts';
import { knowledgeEmbeddings } from './0023_knowledge_embeddings.ts';
import { knowledgeUrls } from './0025_knowledge_urls.ts';
import { agentFields } from './0026_agent_fields.ts';
import { knowledge } from './0027_knowledge.ts';

/** Every migration, in order; each is a factory so it can differ by dialect where SQL must. */
const MIGRATIONS: Record<string, (dialect: Dialect) => Migration> = {
  '0001_foundation': foundation,
  '0002_agents': agents,
  '0003_calls': calls,
  '0004_webhooks': webhooks,
  '0005_housekeeping': housekeeping,
  '0006_leases': leases,
  '0007_limits': limits,
  '0008_tool_calls': toolCalls,
  '0009_recordings': recordings,
  '0010_call_media': callMedia,
  '0011_phone_numbers': phoneNumbers,
  '0012_phone_calls': phoneCalls,
  '0017_agent_tests': agentTests,
  '0018_knowledge_bases': knowledgeBases,
  '0020_retell': retell,
  '0021_knowledge_search': knowledgeSearch,
  '0022_test_run_leases': testRunLeases,
  '0023_knowledge_embeddings': knowledgeEmbeddings,
  '0025_knowledge_urls': knowledgeUrls,
  '0026_agent_fields': agentFields,
  '0027_knowledge': knowledge,
};

export async function migrateToLatest(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const provider: MigrationProvider = {
    async getMigrations() {
      return Object.fromEntries(Object.entries(MIGRATIONS).map(([name, make]) => [name, make(dialect)]));
    },
  };
  const migrator = new Migrator({ db, provider, migrationTableName: 'schema_migrations', migrationLockTableName: 'schema_migrations_lock' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: error });
  }
}
