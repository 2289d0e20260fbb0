import type { Clock } from '../lib/clock.ts';
import { CappedMap } from '../lib/capped-map.ts';
import { newId } from '../lib/ids.ts';
import { withoutUndefined } from '../lib/objects.ts';
import { errors } from '../domain/errors.ts';
import {
  AGENT_DEFAULTS,
  type AgentConfig,
  type AgentCreate,
  type AgentUpdate,
  type EngineSnapshot,
  type ResponseEngine,
  mergeAgentConfig,
} from '../domain/agent.ts';
import { type ConversationFlowDefinition, checkFlowGraph } from '../domain/conversation-flow.ts';
import { type ServiceLlmDefinition, checkLlmStates } from '../domain/service-llm.ts';
import type { AgentRepository, AgentRow, EngineKind, EngineRow } from '../storage/agent.repository.ts';
import type { Store } from '../storage/store.ts';

export type ConversationFlowView = ConversationFlowDefinition & {
  conversation_flow_id: string;
  created_at: number;
  last_modification_timestamp: number;
};
export type ServiceLlmView = ServiceLlmDefinition & { llm_id: string; created_at: number; last_modification_timestamp: number };
export type AgentView = AgentConfig & { agent_id: string; version: number; created_at: number; last_modification_timestamp: number };

/** An agent version as a call needs it: its settings and the engine definition it pinned. */
export interface ResolvedAgentVersion {
  agentId: string;
  version: number;
  config: AgentConfig;
  engine: EngineSnapshot;
}

const VERSION_APPEND_ATTEMPTS = 5;
const VERSION_CACHE_MAX = 5_000;
const HEAD_CACHE_MAX = 10_000;

/** Conversation flows, service LLMs and versioned agents. */
export class AgentService {
  readonly #store: Store;
  readonly #repo: AgentRepository;
  readonly #clock: Clock;
  /** Immutable agent versions already read, by `agentId:version`. */
  readonly #versions = new CappedMap<string, ResolvedAgentVersion>(VERSION_CACHE_MAX);
  /** Agent heads (owner, latest version) by agent id, when this process is the only writer. */
  readonly #heads: CappedMap<string, AgentRow> | null;
  /** Bumped by every agent write here: a head read that overlapped one is not cached. */
  #headWrites = 0;

  /**
   * `cacheHeads`: this process is the only one that writes agents to the store (the embedded
   * store, which one server process owns), so the agent read on every create-web-call can be
   * served from memory and evicted on every update and delete. Several processes share a
   * PostgreSQL store, so there the head is read per call.
   */
  constructor(deps: { store: Store; agents: AgentRepository; clock: Clock; cacheHeads?: boolean }) {
    this.#store = deps.store;
    this.#repo = deps.agents;
    this.#clock = deps.clock;
    this.#heads = deps.cacheHeads ? new CappedMap(HEAD_CACHE_MAX) : null;
  }

  // --- conversation flows -------------------------------------------------------------------

  async createFlow(accountId: string, definition: ConversationFlowDefinition): Promise<ConversationFlowView> {
    assertValid(checkFlowGraph(definition));
    const row = this.#newEngineRow(accountId, newId('conversationFlow'), definition);
    await this.#repo.insertEngine('conversation_flows', row);
    return flowView(row);
  }

  async getFlow(accountId: string, id: string): Promise<ConversationFlowView> {
    return flowView(await this.#engine('conversation_flows', accountId, id));
  }

  async updateFlow(accountId: string, id: string, changes: Partial<ConversationFlowDefinition>) {
    const row = await this.#updateEngine('conversation_flows', accountId, id, changes, (merged) =>
      checkFlowGraph(merged as ConversationFlowDefinition),
    );
    return flowView(row);
  }

  async listFlows(accountId: string): Promise<ConversationFlowView[]> {
    return (await this.#repo.listEngines('conversation_flows', accountId)).map(flowView);
  }

  async deleteFlow(accountId: string, id: string): Promise<void> {
    await this.#deleteEngine('conversation_flows', accountId, id);
  }

  // --- service LLMs -------------------------------------------------------------------------

  async createLlm(accountId: string, definition: ServiceLlmDefinition): Promise<ServiceLlmView> {
    assertValid(checkLlmStates(definition));
    const row = this.#newEngineRow(accountId, newId('serviceLlm'), definition);
    await this.#repo.insertEngine('service_llms', row);
    return llmView(row);
  }

  async getLlm(accountId: string, id: string): Promise<ServiceLlmView> {
    return llmView(await this.#engine('service_llms', accountId, id));
  }

  async updateLlm(accountId: string, id: string, changes: Partial<ServiceLlmDefinition>) {
    const row = await this.#updateEngine('service_llms', accountId, id, changes, (merged) =>
      checkLlmStates(merged as ServiceLlmDefinition),
    );
    return llmView(row);
  }

  async listLlms(accountId: string): Promise<ServiceLlmView[]> {
    return (await this.#repo.listEngines('service_llms', accountId)).map(llmView);
  }

  async deleteLlm(accountId: string, id: string): Promise<void> {
    await this.#deleteEngine('service_llms', accountId, id);
  }

  // --- agents -------------------------------------------------------------------------------

  async createAgent(accountId: string, input: AgentCreate): Promise<AgentView> {
    const now = this.#clock.now();
    const config = mergeAgentConfig({ ...AGENT_DEFAULTS, response_engine: input.response_engine }, input);
    const id = newId('agent');
    await this.#store.db.transaction().execute(async (trx) => {
      const engine = await this.#snapshotEngine(accountId, config.response_engine, trx);
      await this.#repo.insertAgent(
        { id, account_id: accountId, latest_version: 1, created_at: now, updated_at: now },
        { agent_id: id, version: 1, config: JSON.stringify(config), engine_snapshot: JSON.stringify(engine), created_at: now },
        trx,
      );
    });
    return { agent_id: id, version: 1, ...config, created_at: now, last_modification_timestamp: now };
  }

  async getAgent(accountId: string, id: string, version?: number): Promise<AgentView> {
    const row = await this.#repo.findAgentVersion(accountId, id, version);
    if (!row) throw version === undefined ? errors.agentNotFound(id) : errors.agentVersionNotFound(id, version);
    return agentView(row.id, row.version, row.config, row.created_at, row.version_created_at);
  }

  /** Every update makes the next version; the engine definition is pinned again as it is now. */
  async updateAgent(accountId: string, id: string, changes: AgentUpdate): Promise<AgentView> {
    for (let attempt = 0; attempt < VERSION_APPEND_ATTEMPTS; attempt++) {
      const current = await this.#repo.findAgentVersion(accountId, id);
      if (!current) throw errors.agentNotFound(id);
      const config = mergeAgentConfig(JSON.parse(current.config) as AgentConfig, changes);
      const now = Math.max(this.#clock.now(), current.version_created_at);
      const version = current.version + 1;
      const appended = await this.#store.db
        .transaction()
        .execute(async (trx) => {
          const engine = await this.#snapshotEngine(accountId, config.response_engine, trx);
          return this.#repo.appendVersion(
            accountId,
            { agent_id: id, version, config: JSON.stringify(config), engine_snapshot: JSON.stringify(engine), created_at: now },
            trx,
          );
        })
        .finally(() => this.#evictHead(id));
      if (appended) return { agent_id: id, version, ...config, created_at: current.created_at, last_modification_timestamp: now };
    }
    throw errors.internal(new Error('agent version append kept conflicting'));
  }

  async listAgents(accountId: string): Promise<AgentView[]> {
    const rows = await this.#repo.listLatestVersions(accountId);
    return rows.map((row) => agentView(row.id, row.version, row.config, row.created_at, row.version_created_at));
  }

  async listVersions(accountId: string, id: string): Promise<AgentView[]> {
    const agent = await this.#repo.findAgent(accountId, id);
    if (!agent) throw errors.agentNotFound(id);
    const rows = await this.#repo.listVersions(id);
    return rows.map((row) => agentView(id, row.version, row.config, agent.created_at, row.created_at));
  }

  async deleteAgent(accountId: string, id: string): Promise<void> {
    const deleted = await this.#repo.deleteAgent(accountId, id).finally(() => this.#evictHead(id));
    if (!deleted) throw errors.agentNotFound(id);
  }

  /** The version a call runs on: the latest when `version` is omitted. */
  async resolveVersion(accountId: string, id: string, version?: number): Promise<ResolvedAgentVersion> {
    // Versions are immutable, so a version read once can be served from memory; whether the agent
    // exists under this account, and which version is latest, is its head's answer.
    const agent = await this.#head(accountId, id);
    if (!agent) throw errors.agentNotFound(id);
    const wanted = version ?? agent.latest_version;
    if (wanted > agent.latest_version) throw errors.agentVersionNotFound(id, wanted);
    const cacheKey = `${id}:${wanted}`;
    const cached = this.#versions.get(cacheKey);
    if (cached) return cached;
    const row = await this.#repo.findAgentVersion(accountId, id, wanted);
    if (!row) throw version === undefined ? errors.agentNotFound(id) : errors.agentVersionNotFound(id, wanted);
    const resolved: ResolvedAgentVersion = {
      agentId: row.id,
      version: row.version,
      config: JSON.parse(row.config) as AgentConfig,
      engine: JSON.parse(row.engine_snapshot) as EngineSnapshot,
    };
    this.#versions.set(cacheKey, resolved);
    return resolved;
  }

  // --- internals ----------------------------------------------------------------------------

  async #head(accountId: string, id: string): Promise<AgentRow | undefined> {
    const cached = this.#heads?.get(id);
    if (cached) return cached.account_id === accountId ? cached : undefined;
    const writes = this.#headWrites;
    const head = await this.#repo.findAgent(accountId, id);
    if (head && writes === this.#headWrites) this.#heads?.set(id, head);
    return head;
  }

  #evictHead(id: string): void {
    this.#headWrites += 1;
    this.#heads?.delete(id);
  }

  #newEngineRow(accountId: string, id: string, definition: object): EngineRow {
    const now = this.#clock.now();
    return { id, account_id: accountId, config: JSON.stringify(definition), created_at: now, updated_at: now };
  }

  async #engine(kind: EngineKind, accountId: string, id: string): Promise<EngineRow> {
    const row = await this.#repo.findEngine(kind, accountId, id);
    if (!row) throw engineNotFound(kind, id);
    return row;
  }

  async #updateEngine(
    kind: EngineKind,
    accountId: string,
    id: string,
    changes: object,
    check: (merged: object) => string | null,
  ): Promise<EngineRow> {
    return this.#store.db.transaction().execute(async (trx) => {
      const row = await this.#repo.findEngine(kind, accountId, id, trx);
      if (!row) throw engineNotFound(kind, id);
      const merged = { ...(JSON.parse(row.config) as object), ...withoutUndefined(changes) };
      assertValid(check(merged));
      const now = Math.max(this.#clock.now(), row.updated_at);
      const config = JSON.stringify(merged);
      await this.#repo.updateEngine(kind, accountId, id, config, now, trx);
      return { ...row, config, updated_at: now };
    });
  }

  async #deleteEngine(kind: EngineKind, accountId: string, id: string): Promise<void> {
    await this.#store.db.transaction().execute(async (trx) => {
      if (!(await this.#repo.findEngine(kind, accountId, id, trx))) throw engineNotFound(kind, id);
      const users = await this.#repo.agentsUsingEngine(accountId, id, trx);
      if (users.length > 0) {
        throw errors.inUse(kind === 'conversation_flows' ? 'conversation flow' : 'service LLM', id, `agent ${users[0]}`);
      }
      await this.#repo.deleteEngine(kind, accountId, id, trx);
    });
  }

  async #snapshotEngine(accountId: string, engine: ResponseEngine, db: Store['db']): Promise<EngineSnapshot> {
    if (engine.type === 'conversation_flow') {
      const row = await this.#repo.findEngine('conversation_flows', accountId, engine.conversation_flow_id, db);
      if (!row) throw errors.conversationFlowNotFound(engine.conversation_flow_id);
      return { ...engine, definition: JSON.parse(row.config) as ConversationFlowDefinition };
    }
    const row = await this.#repo.findEngine('service_llms', accountId, engine.llm_id, db);
    if (!row) throw errors.serviceLlmNotFound(engine.llm_id);
    return { ...engine, definition: JSON.parse(row.config) as ServiceLlmDefinition };
  }
}

function assertValid(problem: string | null): void {
  if (problem) throw errors.invalidRequest(problem);
}

function engineNotFound(kind: EngineKind, id: string) {
  return kind === 'conversation_flows' ? errors.conversationFlowNotFound(id) : errors.serviceLlmNotFound(id);
}


function flowView(row: EngineRow): ConversationFlowView {
  return {
    conversation_flow_id: row.id,
    ...(JSON.parse(row.config) as ConversationFlowDefinition),
    created_at: row.created_at,
    last_modification_timestamp: row.updated_at,
  };
}

function llmView(row: EngineRow): ServiceLlmView {
  return {
    llm_id: row.id,
    ...(JSON.parse(row.config) as ServiceLlmDefinition),
    created_at: row.created_at,
    last_modification_timestamp: row.updated_at,
  };
}

function agentView(id: string, version: number, config: string, createdAt: number, versionCreatedAt: number): AgentView {
  return {
    agent_id: id,
    version,
    ...(JSON.parse(config) as AgentConfig),
    created_at: createdAt,
    last_modification_timestamp: versionCreatedAt,
  };
}
