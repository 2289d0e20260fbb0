import type { AgentHead, AgentVersion, EngineRecord } from '../domain/agent.ts';
import type { ConversationFlowDefinition } from '../domain/conversation-flow.ts';
import type { ServiceLlmDefinition } from '../domain/service-llm.ts';
import { CompiledStatement } from './compiled.ts';
import { decodeJson, encodeJson, type JsonText } from './json-column.ts';
import type { Executor, Store } from './store.ts';
import type { AgentVersionNoteTable, AgentVersionTable } from './tables/agent.tables.ts';

/** The two engine tables and the definition each holds. */
export interface EngineDefinitions {
  conversation_flows: ConversationFlowDefinition;
  service_llms: ServiceLlmDefinition;
}
export type EngineKind = keyof EngineDefinitions;

/**
 * The two engine tables have the same columns; only what `config` decodes to differs. Queries are
 * typed against one of them, and each method's signature restores the definition's type.
 */
type EngineTableName = 'conversation_flows';
const table = (kind: EngineKind) => kind as EngineTableName;
type StoredDefinition = JsonText<ConversationFlowDefinition>;

/** An agent's head with one of its versions, as reads by id return them. */
export interface AgentWithVersion {
  agent: Pick<AgentHead, 'id' | 'created_at' | 'latest_version'>;
  version: AgentVersion;
}

/** The columns of an agent with one of its versions (see toAgentWithVersion). */
const AGENT_WITH_VERSION = [
  'agents.id',
  'agents.created_at',
  'agents.latest_version',
  'agent_versions.agent_id',
  'agent_versions.version',
  'agent_versions.config',
  'agent_versions.engine_snapshot',
  'agent_versions.created_at as version_created_at',
] as const;

function toAgentWithVersion(row: Pick<AgentHead, 'id' | 'created_at' | 'latest_version'> & Omit<AgentVersionTable, 'created_at'> & { version_created_at: number }): AgentWithVersion {
  return {
    agent: { id: row.id, created_at: row.created_at, latest_version: row.latest_version },
    version: decodeVersion({ ...row, created_at: row.version_created_at }),
  };
}

function decodeVersion(row: AgentVersionTable): AgentVersion {
  return { agent_id: row.agent_id, version: row.version, config: decodeJson(row.config), engine: decodeJson(row.engine_snapshot), created_at: row.created_at };
}

function encodeVersion(version: AgentVersion): AgentVersionTable {
  return {
    agent_id: version.agent_id,
    version: version.version,
    config: encodeJson(version.config),
    engine_snapshot: encodeJson(version.engine),
    created_at: version.created_at,
  };
}

/** Conversation flows, service LLMs, agents and their immutable versions. Every read is scoped to an account. */
export class AgentRepository {
  readonly #db: Executor;
  /** Read on every create-web-call. */
  readonly #findAgent: CompiledStatement<AgentHead>;

  constructor(store: Store) {
    this.#db = store.db;
    this.#findAgent = new CompiledStatement(
      store,
      'select id, account_id, latest_version, created_at, updated_at from agents where id = ? and account_id = ?',
    );
  }

  async insertEngine<K extends EngineKind>(kind: K, record: EngineRecord<EngineDefinitions[K]>, db: Executor = this.#db): Promise<void> {
    const { definition, ...row } = record;
    await db.insertInto(table(kind)).values({ ...row, config: encodeJson(definition) as StoredDefinition }).execute();
  }

  async findEngine<K extends EngineKind>(kind: K, accountId: string, id: string, db: Executor = this.#db): Promise<EngineRecord<EngineDefinitions[K]> | undefined> {
    const row = await db.selectFrom(table(kind)).selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && decodeEngine<EngineDefinitions[K]>(row);
  }

  async updateEngine<K extends EngineKind>(kind: K, accountId: string, id: string, definition: EngineDefinitions[K], atMs: number, db: Executor = this.#db) {
    const result = await db
      .updateTable(table(kind))
      .set({ config: encodeJson(definition) as StoredDefinition, updated_at: atMs })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async listEngines<K extends EngineKind>(kind: K, accountId: string): Promise<Array<EngineRecord<EngineDefinitions[K]>>> {
    const rows = await this.#db
      .selectFrom(table(kind))
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map((row) => decodeEngine<EngineDefinitions[K]>(row));
  }

  async deleteEngine(kind: EngineKind, accountId: string, id: string, db: Executor = this.#db): Promise<boolean> {
    const result = await db.deleteFrom(table(kind)).where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Agents whose latest version uses this engine (a reference written into the version config). */
  async agentsUsingEngine(accountId: string, engineId: string, db: Executor = this.#db): Promise<string[]> {
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
        const engine = decodeJson(row.config).response_engine;
        if (engine.type === 'custom_llm') return false;
        return engine.type === 'conversation_flow' ? engine.conversation_flow_id === engineId : engine.llm_id === engineId;
      })
      .map((row) => row.id);
  }

  async insertAgent(agent: AgentHead, version: AgentVersion, db: Executor): Promise<void> {
    await db.insertInto('agents').values(agent).execute();
    await db.insertInto('agent_versions').values(encodeVersion(version)).execute();
  }

  async findAgent(accountId: string, id: string, db: Executor = this.#db): Promise<AgentHead | undefined> {
    return this.#findAgent.first(db, [id, accountId]);
  }

  /** The agent and one version (the latest when `version` is omitted), if both exist under the account. */
  async findAgentVersion(accountId: string, id: string, version?: number): Promise<AgentWithVersion | undefined> {
    let query = this.#db
      .selectFrom('agents')
      .innerJoin('agent_versions', 'agent_versions.agent_id', 'agents.id')
      .select(AGENT_WITH_VERSION)
      .where('agents.id', '=', id)
      .where('agents.account_id', '=', accountId);
    query =
      version === undefined
        ? query.whereRef('agent_versions.version', '=', 'agents.latest_version')
        : query.where('agent_versions.version', '=', version);
    const row = await query.executeTakeFirst();
    return row && toAgentWithVersion(row);
  }

  /** Appends `version`; fails if another writer took that number first. */
  async appendVersion(accountId: string, version: AgentVersion, db: Executor): Promise<boolean> {
    const result = await db
      .updateTable('agents')
      .set({ latest_version: version.version, updated_at: version.created_at })
      .where('id', '=', version.agent_id)
      .where('account_id', '=', accountId)
      .where('latest_version', '=', version.version - 1)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await db.insertInto('agent_versions').values(encodeVersion(version)).execute();
    return true;
  }

  /** Every agent of the account with its latest version, newest agent first. */
  async listLatestVersions(accountId: string): Promise<AgentWithVersion[]> {
    const rows = await this.#db
      .selectFrom('agents')
      .innerJoin('agent_versions', (join) =>
        join.onRef('agent_versions.agent_id', '=', 'agents.id').onRef('agent_versions.version', '=', 'agents.latest_version'),
      )
      .select(AGENT_WITH_VERSION)
      .where('agents.account_id', '=', accountId)
      .orderBy('agents.created_at', 'desc')
      .orderBy('agents.id', 'desc')
      .execute();
    return rows.map(toAgentWithVersion);
  }

  async listVersions(agentId: string): Promise<AgentVersion[]> {
    const rows = await this.#db
      .selectFrom('agent_versions')
      .selectAll()
      .where('agent_id', '=', agentId)
      .orderBy('version', 'asc')
      .execute();
    return rows.map(decodeVersion);
  }

  /**
   * Records what `note` gives of a version (fields undefined are kept); `published_at` is kept once
   * set, so the first publication's time stays.
   */
  async noteVersion(note: Pick<AgentVersionNoteTable, 'agent_id' | 'version'> & Partial<AgentVersionNoteTable>, db: Executor = this.#db): Promise<void> {
    const row: AgentVersionNoteTable = { base_version: null, published_at: null, version_title: null, version_description: null, ...note };
    const changes = Object.fromEntries(
      (['base_version', 'version_title', 'version_description'] as const).filter((k) => note[k] !== undefined).map((k) => [k, note[k]]),
    );
    await db
      .insertInto('agent_version_notes')
      .values(row)
      .onConflict((oc) => {
        const { published_at: publishedAt } = note;
        if (publishedAt === undefined && Object.keys(changes).length === 0) return oc.columns(['agent_id', 'version']).doNothing();
        return oc.columns(['agent_id', 'version']).doUpdateSet((eb) => ({
          ...changes,
          ...(publishedAt === undefined ? {} : { published_at: eb.fn.coalesce('agent_version_notes.published_at', eb.val(publishedAt)) }),
        }));
      })
      .execute();
  }

  /** The notes of an agent's versions, by version. */
  async versionNotes(agentId: string, db: Executor = this.#db): Promise<Map<number, AgentVersionNoteTable>> {
    const rows = await db.selectFrom('agent_version_notes').selectAll().where('agent_id', '=', agentId).execute();
    return new Map(rows.map((row) => [Number(row.version), { ...row, version: Number(row.version), base_version: row.base_version === null ? null : Number(row.base_version), published_at: row.published_at === null ? null : Number(row.published_at) }]));
  }

  async deleteAgent(accountId: string, id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const agent = await this.findAgent(accountId, id, trx);
      if (!agent) return false;
      await trx.deleteFrom('agent_version_notes').where('agent_id', '=', id).execute();
      await trx.deleteFrom('agent_versions').where('agent_id', '=', id).execute();
      await trx.deleteFrom('agents').where('id', '=', id).execute();
      return true;
    });
  }
}

/** An engine row with its definition parsed; the table it came from says which definition it is. */
function decodeEngine<Definition>(row: { id: string; account_id: string; config: string; created_at: number; updated_at: number }): EngineRecord<Definition> {
  return { id: row.id, account_id: row.account_id, definition: JSON.parse(row.config) as Definition, created_at: row.created_at, updated_at: row.updated_at };
}
