import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { CompiledStatement } from './compiled.ts';
import type { Store } from './store.ts';
import type { AgentTable, AgentVersionTable, EngineTable } from './tables/agent.tables.ts';

export type EngineKind = 'conversation_flows' | 'service_llms';
export type EngineRow = EngineTable;
export type AgentRow = AgentTable;
export type AgentVersionRow = AgentVersionTable;

/** Conversation flows, service LLMs, agents and their immutable versions. Every read is scoped to an account. */
export class AgentRepository {
  readonly #db: Kysely<Database>;
  /** Read on every create-web-call. */
  readonly #findAgent: CompiledStatement<AgentRow>;

  constructor(store: Store) {
    this.#db = store.db;
    this.#findAgent = new CompiledStatement(
      store,
      'select id, account_id, latest_version, created_at, updated_at from agents where id = ? and account_id = ?',
    );
  }

  async insertEngine(kind: EngineKind, row: EngineRow, db: Kysely<Database> = this.#db): Promise<void> {
    await db.insertInto(kind).values(row).execute();
  }

  async findEngine(kind: EngineKind, accountId: string, id: string, db: Kysely<Database> = this.#db) {
    return db.selectFrom(kind).selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  async updateEngine(kind: EngineKind, accountId: string, id: string, config: string, atMs: number, db: Kysely<Database> = this.#db) {
    const result = await db
      .updateTable(kind)
      .set({ config, updated_at: atMs })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async listEngines(kind: EngineKind, accountId: string): Promise<EngineRow[]> {
    return this.#db
      .selectFrom(kind)
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  async deleteEngine(kind: EngineKind, accountId: string, id: string, db: Kysely<Database> = this.#db): Promise<boolean> {
    const result = await db.deleteFrom(kind).where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Agents whose latest version uses this engine (a reference written into the version config). */
  async agentsUsingEngine(accountId: string, engineId: string, db: Kysely<Database> = this.#db): Promise<string[]> {
    const rows = await db
      .selectFrom('agents')
      .innerJoin('agent_versions', (join) =>
        join.onRef('agent_versions.agent_id', '=', 'agents.id').onRef('agent_versions.version', '=', 'agents.latest_version'),
      )
      .select(['agents.id', 'agent_versions.config'])
      .where('agents.account_id', '=', accountId)
      .execute();
    return rows
      .filter((row) => {
        const engine = (JSON.parse(row.config) as { response_engine: Record<string, string> }).response_engine;
        return engine.conversation_flow_id === engineId || engine.llm_id === engineId;
      })
      .map((row) => row.id);
  }

  async insertAgent(agent: AgentRow, version: AgentVersionRow, db: Kysely<Database>): Promise<void> {
    await db.insertInto('agents').values(agent).execute();
    await db.insertInto('agent_versions').values(version).execute();
  }

  async findAgent(accountId: string, id: string, db: Kysely<Database> = this.#db): Promise<AgentRow | undefined> {
    return this.#findAgent.first(db, [id, accountId]);
  }

  /** The agent and one version (the latest when `version` is omitted), if both exist under the account. */
  async findAgentVersion(accountId: string, id: string, version?: number) {
    let query = this.#db
      .selectFrom('agents')
      .innerJoin('agent_versions', 'agent_versions.agent_id', 'agents.id')
      .select([
        'agents.id',
        'agents.created_at',
        'agents.latest_version',
        'agent_versions.version',
        'agent_versions.config',
        'agent_versions.engine_snapshot',
        'agent_versions.created_at as version_created_at',
      ])
      .where('agents.id', '=', id)
      .where('agents.account_id', '=', accountId);
    query =
      version === undefined
        ? query.whereRef('agent_versions.version', '=', 'agents.latest_version')
        : query.where('agent_versions.version', '=', version);
    return query.executeTakeFirst();
  }

  /** Appends version `version`; fails if another writer took that number first. */
  async appendVersion(accountId: string, row: AgentVersionRow, db: Kysely<Database>): Promise<boolean> {
    const result = await db
      .updateTable('agents')
      .set({ latest_version: row.version, updated_at: row.created_at })
      .where('id', '=', row.agent_id)
      .where('account_id', '=', accountId)
      .where('latest_version', '=', row.version - 1)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await db.insertInto('agent_versions').values(row).execute();
    return true;
  }

  async listLatestVersions(accountId: string) {
    return this.#db
      .selectFrom('agents')
      .innerJoin('agent_versions', (join) =>
        join.onRef('agent_versions.agent_id', '=', 'agents.id').onRef('agent_versions.version', '=', 'agents.latest_version'),
      )
      .select(['agents.id', 'agents.created_at', 'agent_versions.version', 'agent_versions.config', 'agent_versions.created_at as version_created_at'])
      .where('agents.account_id', '=', accountId)
      .orderBy('agents.created_at', 'desc')
      .orderBy('agents.id', 'desc')
      .execute();
  }

  async listVersions(agentId: string) {
    return this.#db
      .selectFrom('agent_versions')
      .selectAll()
      .where('agent_id', '=', agentId)
      .orderBy('version', 'asc')
      .execute();
  }

  async deleteAgent(accountId: string, id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const agent = await this.findAgent(accountId, id, trx);
      if (!agent) return false;
      await trx.deleteFrom('agent_versions').where('agent_id', '=', id).execute();
      await trx.deleteFrom('agents').where('id', '=', id).execute();
      return true;
    });
  }
}
