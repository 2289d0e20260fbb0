import type { Clock } from '../lib/clock.ts';
import { entryPhones } from '../lib/phonemes.ts';
import { CappedMap } from '../lib/capped-map.ts';
import { newId } from '../lib/ids.ts';
import { withoutUndefined } from '../lib/objects.ts';
import { errors } from '../domain/errors.ts';
import {
  AGENT_DEFAULTS,
  type AgentConfig,
  type AgentCreate,
  type AgentHead,
  type AgentUpdate,
  type EngineRecord,
  type EngineSnapshot,
  type PostCallAnalysisField,
  type ResponseEngine,
  agentFieldsWithoutEffect,
  checkAnalysisFields,
  completeAgentConfig,
  mergeAgentConfig,
  withStorageOptOut,
} from '../domain/agent.ts';
import { type ConversationFlowDefinition, checkFlowGraph } from '../domain/conversation-flow.ts';
import { type ServiceLlmDefinition, checkLlmStates, llmFieldsWithoutEffect } from '../domain/service-llm.ts';
import { type SpeechCatalog, type SpeechProblem, type Voice, findVoice, languageProblem, voiceProblem } from '../domain/voice.ts';
import type { AgentRepository, EngineDefinitions, EngineKind } from '../storage/agent.repository.ts';
import type { Executor, Store } from '../storage/store.ts';
import { type DestinationCheck, checkWebhookUrl } from './webhook-url.ts';

export type ConversationFlowView = ConversationFlowDefinition & {
  conversation_flow_id: string;
  created_at: number;
  last_modification_timestamp: number;
};
export type ServiceLlmView = ServiceLlmDefinition & { llm_id: string; accepted_without_effect: string[]; created_at: number; last_modification_timestamp: number };
export type AgentView = AgentConfig & { agent_id: string; version: number; accepted_without_effect: string[]; created_at: number; last_modification_timestamp: number };

/** One entry of Retell's list-agent-versions. */
export interface AgentVersionSummary {
  version: number;
  is_published: boolean;
  last_modification_timestamp: number;
  base_version?: number;
  version_title?: string;
  version_description?: string;
}

/** An agent version as a call needs it: its settings and the engine definition it pinned. */
export interface ResolvedAgentVersion {
  agentId: string;
  version: number;
  config: AgentConfig;
  engine: EngineSnapshot;
}

/**
 * The version a new call runs on, and how current the agent read behind it is: `guard` is the
 * agent's latest version as remembered by this process (several processes share the store, so it
 * may be stale), which the call's insert must check (CallRepository.insert); undefined when the
 * head was read from the store just now or this process is the only writer.
 */
export interface ResolvedForCall {
  agent: ResolvedAgentVersion;
  guard: number | undefined;
}

/** The agent settings checkSettings() looks at beyond their schema. */
type CheckedSettings = {
  response_engine?: ResponseEngine;
  webhook_url?: string | null;
  language?: string;
  voice_id?: string;
  fallback_voice_ids?: string[] | null;
  post_call_analysis_data?: PostCallAnalysisField[];
  pronunciation_dictionary?: Array<{ alphabet: string; phoneme: string }> | null;
};

const VERSION_APPEND_ATTEMPTS = 5;
const VERSION_CACHE_MAX = 5_000;
const HEAD_CACHE_MAX = 10_000;

/** Conversation flows, service LLMs and versioned agents. */
export class AgentService {
  readonly #store: Store;
  readonly #repo: AgentRepository;
  readonly #clock: Clock;
  readonly #destinations: DestinationCheck;
  readonly #speech: SpeechCatalog;
  /** Immutable agent versions already read, by `agentId:version`. */
  readonly #versions = new CappedMap<string, ResolvedAgentVersion>(VERSION_CACHE_MAX);
  /** Agent heads (owner, latest version) by agent id, when this process is the only writer. */
  readonly #heads: CappedMap<string, AgentHead> | null;
  /** Bumped by every agent write here: a head read that overlapped one is not cached. */
  #headWrites = 0;
  /**
   * Agent heads as last read, when other processes also write agents (PostgreSQL): only
   * `resolveForCall` uses them, and only with a guard its caller's write checks.
   */
  readonly #guardedHeads: CappedMap<string, AgentHead> | null;

  /**
   * `cacheHeads`: this process is the only one that writes agents to the store (the embedded
   * store, which one server process owns), so the agent read on every create-web-call can be
   * served from memory and evicted on every update and delete. Several processes share a
   * PostgreSQL store, so there a remembered head only serves `resolveForCall`, whose caller's
   * insert checks it is still current. `destinations` judges a `webhook_url`'s host when it is
   * set. `speech` is what the configured speech engines offer: an agent's `language` and
   * `voice_id` must be among it.
   */
  /** Issue 29: which of these ids name knowledge bases of the account (absent: none are checked). */
  readonly #knowledgeBases: ((accountId: string, ids: readonly string[]) => Promise<readonly string[]>) | undefined;

  constructor(deps: {
    store: Store;
    agents: AgentRepository;
    clock: Clock;
    destinations: DestinationCheck;
    speech: SpeechCatalog;
    cacheHeads?: boolean;
    knowledgeBases?: (accountId: string, ids: readonly string[]) => Promise<readonly string[]>;
  }) {
    this.#knowledgeBases = deps.knowledgeBases;
    this.#store = deps.store;
    this.#repo = deps.agents;
    this.#clock = deps.clock;
    this.#destinations = deps.destinations;
    this.#speech = deps.speech;
    this.#heads = deps.cacheHeads ? new CappedMap(HEAD_CACHE_MAX) : null;
    this.#guardedHeads = deps.cacheHeads ? null : new CappedMap(HEAD_CACHE_MAX);
  }

  // --- conversation flows -------------------------------------------------------------------

  async createFlow(accountId: string, definition: ConversationFlowDefinition): Promise<ConversationFlowView> {
    assertValid(this.#checkFlow(definition));
    await this.#checkFlowKnowledge(accountId, definition.nodes);
    await this.#checkKnowledgeBases(accountId, definition.knowledge_base_ids);
    const record = this.#newEngine(accountId, newId('conversationFlow'), definition);
    await this.#repo.insertEngine('conversation_flows', record);
    return flowView(record);
  }

  async getFlow(accountId: string, id: string): Promise<ConversationFlowView> {
    return flowView(await this.#engine('conversation_flows', accountId, id));
  }

  async updateFlow(accountId: string, id: string, changes: Partial<ConversationFlowDefinition>) {
    if (changes.nodes) await this.#checkFlowKnowledge(accountId, changes.nodes);
    await this.#checkKnowledgeBases(accountId, changes.knowledge_base_ids);
    return flowView(await this.#updateEngine('conversation_flows', accountId, id, changes, (flow) => this.#checkFlow(flow)));
  }

  async listFlows(accountId: string): Promise<ConversationFlowView[]> {
    return (await this.#repo.listEngines('conversation_flows', accountId)).map(flowView);
  }

  async deleteFlow(accountId: string, id: string): Promise<void> {
    await this.#deleteEngine('conversation_flows', accountId, id);
  }

  /** The graph and tools of a flow; a tool's `url` goes through the one webhook URL check (throws 400). */
  #checkFlow(flow: ConversationFlowDefinition): string | null {
    const problem = checkFlowGraph(flow);
    if (problem) return problem;
    this.#checkFunctionUrls(flow.tools ?? [], 'tools');
    return null;
  }

  /** Each function's `url` through checkWebhookUrl, named by its place (`tools[0].url`). */
  #checkFunctionUrls(functions: ReadonlyArray<{ url: string } | { type: 'end_call' | 'transfer_call' | 'press_digit' }>, where: string): void {
    for (const [i, f] of functions.entries()) if ('url' in f) checkWebhookUrl(f.url, this.#destinations, `${where}[${i}].url`);
  }

  // --- service LLMs -------------------------------------------------------------------------

  async createLlm(accountId: string, definition: ServiceLlmDefinition): Promise<ServiceLlmView> {
    assertValid(this.#checkLlm(definition));
    await this.#checkKnowledgeBases(accountId, definition.knowledge_base_ids);
    const record = this.#newEngine(accountId, newId('serviceLlm'), definition);
    await this.#repo.insertEngine('service_llms', record);
    return llmView(record);
  }

  /** The states and functions of a service LLM; each function's `url` through the webhook URL check (throws 400). */
  #checkLlm(llm: ServiceLlmDefinition): string | null {
    const problem = checkLlmStates(llm);
    if (problem) return problem;
    this.#checkFunctionUrls(llm.general_tools ?? [], 'general_tools');
    for (const [i, state] of (llm.states ?? []).entries()) this.#checkFunctionUrls(state.tools ?? [], `states[${i}].tools`);
    return null;
  }

  /** A custom LLM's knowledge bases, checked as #checkKnowledgeBases does (`response_engine.knowledge_base_ids.0`). */
  async #checkEngineKnowledge(accountId: string, engine: ResponseEngine | undefined): Promise<void> {
    if (engine?.type === 'custom_llm') await this.#checkKnowledgeBases(accountId, engine.knowledge_base_ids, 'response_engine.');
  }

  /** Every id of `knowledge_base_ids` must name a knowledge base of the account (400 naming the first that does not, after `prefix`). */
  async #checkKnowledgeBases(accountId: string, ids: readonly string[] | undefined, prefix = ''): Promise<void> {
    if (!ids || ids.length === 0 || !this.#knowledgeBases) return;
    const found = new Set(await this.#knowledgeBases(accountId, ids));
    const missing = ids.findIndex((id) => !found.has(id));
    if (missing >= 0) throw errors.invalidRequest(`${prefix}knowledge_base_ids.${missing}: no knowledge base ${ids[missing]} under this API key`);
  }

  /** The knowledge bases of a flow's `knowledge` nodes, each checked as #checkKnowledgeBases does (`nodes.2.knowledge_base_ids.0`). */
  async #checkFlowKnowledge(accountId: string, nodes: ConversationFlowDefinition['nodes']): Promise<void> {
    const named = [...new Set(nodes.flatMap((n) => n.knowledge_base_ids ?? []))];
    if (named.length === 0 || !this.#knowledgeBases) return;
    const found = new Set(await this.#knowledgeBases(accountId, named));
    for (const [i, node] of nodes.entries()) {
      const ids = node.knowledge_base_ids ?? [];
      const missing = ids.findIndex((id) => !found.has(id));
      if (missing >= 0) throw errors.invalidRequest(`nodes.${i}.knowledge_base_ids.${missing}: no knowledge base ${ids[missing]} under this API key`);
    }
  }

  async getLlm(accountId: string, id: string): Promise<ServiceLlmView> {
    return llmView(await this.#engine('service_llms', accountId, id));
  }

  async updateLlm(accountId: string, id: string, changes: Partial<ServiceLlmDefinition>) {
    await this.#checkKnowledgeBases(accountId, changes.knowledge_base_ids);
    return llmView(await this.#updateEngine('service_llms', accountId, id, changes, (llm) => this.#checkLlm(llm)));
  }

  async listLlms(accountId: string): Promise<ServiceLlmView[]> {
    return (await this.#repo.listEngines('service_llms', accountId)).map(llmView);
  }

  async deleteLlm(accountId: string, id: string): Promise<void> {
    await this.#deleteEngine('service_llms', accountId, id);
  }

  // --- agents -------------------------------------------------------------------------------

  /**
   * Checks agent settings a request gives beyond their schema: a `webhook_url` goes through the one
   * webhook URL check (src/services/webhook-url.ts); a `language` must be one both speech engines
   * take and a `voice_id` (and each of `fallback_voice_ids`) one of the speech engines' voices; `post_call_analysis_data` has unique
   * names and choices. `prefix` says where they are in the request (`agent_override.agent.` for a
   * call's override).
   */
  checkSettings(settings: CheckedSettings, prefix = ''): void {
    if (settings.post_call_analysis_data) assertValid(checkAnalysisFields(settings.post_call_analysis_data, `${prefix}post_call_analysis_data`));
    if (typeof settings.webhook_url === 'string') checkWebhookUrl(settings.webhook_url, this.#destinations, `${prefix}webhook_url`);
    if (settings.response_engine?.type === 'custom_llm') {
      checkWebhookUrl(settings.response_engine.llm_websocket_url, this.#destinations, 'response_engine.llm_websocket_url', 'ws');
    }
    if (settings.language !== undefined) refuse(languageProblem(this.#speech, settings.language, `${prefix}language`));
    if (settings.voice_id !== undefined) refuse(voiceProblem(this.#speech, settings.voice_id, `${prefix}voice_id`));
    // Issue 26: each fallback voice is one a configured provider speaks, as the voice itself.
    settings.fallback_voice_ids?.forEach((id) => refuse(voiceProblem(this.#speech, id, `${prefix}fallback_voice_ids`)));
    // Phonemes a synthesiser cannot read are refused here, not dropped at the first call (lib/phonemes.ts).
    settings.pronunciation_dictionary?.forEach((entry, i) => {
      const parsed = entryPhones(entry.alphabet, entry.phoneme);
      if (parsed && 'unknown' in parsed) {
        const what = entry.alphabet === 'cmu' ? 'a CMU ARPAbet phone' : 'an English IPA sound';
        throw errors.invalidRequest(`${prefix}pronunciation_dictionary.${i}.phoneme: "${parsed.unknown}" is not ${what}`);
      }
    });
  }

  /**
   * The create-web-call check of a call's settings: the override's fields as checkSettings does,
   * then the language and voice the call would run on. An agent saved while the server ran other
   * speech engines may name a voice or language these engines lack: the call is refused with the
   * way out rather than spoken in a voice nobody chose.
   */
  checkCallSettings(agent: ResolvedAgentVersion, override: CheckedSettings | undefined): void {
    if (override) this.checkSettings(override, 'agent_override.agent.');
    const language = override?.language ?? agent.config.language;
    const voiceId = override?.voice_id ?? agent.config.voice_id;
    const stale = (problem: SpeechProblem | null): void => {
      if (!problem) return;
      throw errors.invalidRequest(
        `Agent ${agent.agentId} version ${agent.version} cannot run on this server's speech engines: ${problem.message} ` +
          'Update the agent (update-agent) or set agent_override.agent for this call.',
        problem.details,
      );
    };
    if (override?.language === undefined) stale(languageProblem(this.#speech, language));
    if (override?.voice_id === undefined) stale(voiceProblem(this.#speech, voiceId));
  }

  /** The voices of this server's speech engine, its default first. */
  listVoices(): Voice[] {
    const { voices, defaultVoiceId } = this.#speech.synthesiser;
    return [...voices].sort((a, b) => Number(b.voice_id === defaultVoiceId) - Number(a.voice_id === defaultVoiceId));
  }

  getVoice(voiceId: string): Voice {
    const voice = findVoice(this.#speech, voiceId);
    if (!voice) throw errors.voiceNotFound(voiceId);
    return voice;
  }

  async createAgent(accountId: string, input: AgentCreate): Promise<AgentView> {
    this.checkSettings(input);
    await this.#checkEngineKnowledge(accountId, input.response_engine);
    const now = this.#clock.now();
    // Without a voice_id the agent speaks with the engine's default voice (flite-kal16 embedded).
    const defaults = { ...AGENT_DEFAULTS, voice_id: this.#speech.synthesiser.defaultVoiceId, response_engine: input.response_engine };
    const config = optedOut(mergeAgentConfig(defaults, input), input);
    const id = newId('agent');
    await this.#store.transaction(async (trx) => {
      const engine = await this.#snapshotEngine(accountId, config.response_engine, trx);
      await this.#repo.insertAgent(
        { id, account_id: accountId, latest_version: 1, created_at: now, updated_at: now },
        { agent_id: id, version: 1, config, engine, created_at: now },
        trx,
      );
    });
    return agentView(id, 1, config, now, now);
  }

  async getAgent(accountId: string, id: string, version?: number): Promise<AgentView> {
    const found = await this.#repo.findAgentVersion(accountId, id, version);
    if (!found) throw version === undefined ? errors.agentNotFound(id) : errors.agentVersionNotFound(id, version);
    return agentView(id, found.version.version, found.version.config, found.agent.created_at, found.version.created_at);
  }

  /** Every update makes the next version; the engine definition is pinned again as it is now. */
  async updateAgent(accountId: string, id: string, changes: AgentUpdate): Promise<AgentView> {
    this.checkSettings(changes);
    await this.#checkEngineKnowledge(accountId, changes.response_engine);
    for (let attempt = 0; attempt < VERSION_APPEND_ATTEMPTS; attempt++) {
      const current = await this.#repo.findAgentVersion(accountId, id);
      if (!current) throw errors.agentNotFound(id);
      // A version's description is of that version: the next one has only what this update gives.
      const config = optedOut({ ...mergeAgentConfig(completeAgentConfig(current.version.config), changes), version_description: changes.version_description ?? null }, changes);
      const now = Math.max(this.#clock.now(), current.version.created_at);
      const version = current.version.version + 1;
      const appended = await this.#store
        .transaction(async (trx) => {
          const engine = await this.#snapshotEngine(accountId, config.response_engine, trx);
          return this.#repo.appendVersion(accountId, { agent_id: id, version, config, engine, created_at: now }, trx);
        })
        .finally(() => this.#evictHead(id));
      if (appended) return agentView(id, version, config, current.agent.created_at, now);
    }
    throw errors.internal(new Error('agent version append kept conflicting'));
  }

  async listAgents(accountId: string): Promise<AgentView[]> {
    const rows = await this.#repo.listLatestVersions(accountId);
    return rows.map(({ agent, version }) => agentView(agent.id, version.version, version.config, agent.created_at, version.created_at));
  }

  async listVersions(accountId: string, id: string): Promise<AgentView[]> {
    const agent = await this.#repo.findAgent(accountId, id);
    if (!agent) throw errors.agentNotFound(id);
    const versions = await this.#repo.listVersions(id);
    return versions.map((v) => agentView(id, v.version, v.config, agent.created_at, v.created_at));
  }

  /**
   * Retell's create-agent-version: the next version, a copy of `baseVersion`'s settings and of the
   * engine definition it pinned (so it runs as that version ran), noted as made from it.
   */
  async createVersion(accountId: string, id: string, baseVersion: number): Promise<AgentView> {
    for (let attempt = 0; attempt < VERSION_APPEND_ATTEMPTS; attempt++) {
      const [latest, base] = await Promise.all([this.#repo.findAgentVersion(accountId, id), this.#repo.findAgentVersion(accountId, id, baseVersion)]);
      if (!latest) throw errors.agentNotFound(id);
      if (!base) throw errors.agentVersionNotFound(id, baseVersion);
      const now = Math.max(this.#clock.now(), latest.version.created_at);
      const version = latest.version.version + 1;
      const appended = await this.#store
        .transaction(async (trx) => {
          const added = await this.#repo.appendVersion(accountId, { ...base.version, version, created_at: now }, trx);
          if (added) await this.#repo.noteVersion({ agent_id: id, version, base_version: baseVersion }, trx);
          return added;
        })
        .finally(() => this.#evictHead(id));
      if (appended) return agentView(id, version, base.version.config, latest.agent.created_at, now);
    }
    throw errors.internal(new Error('agent version append kept conflicting'));
  }

  /**
   * Retell's publish-agent-version. Versions here are immutable from the start, so publishing
   * changes no setting: it marks the version published (the first time is kept) with a title and
   * description, as list-agent-versions shows them.
   */
  async publishVersion(accountId: string, id: string, input: { version: number; version_title?: string; version_description?: string }): Promise<void> {
    const found = await this.#repo.findAgentVersion(accountId, id, input.version);
    if (!found) throw errors.agentVersionNotFound(id, input.version);
    await this.#repo.noteVersion({ agent_id: id, version: input.version, published_at: this.#clock.now(), version_title: input.version_title, version_description: input.version_description });
  }

  /** Retell's list-agent-versions: the versions with what is noted of them, in `descending` or ascending order of version. */
  async listVersionSummaries(accountId: string, id: string): Promise<AgentVersionSummary[]> {
    const agent = await this.#repo.findAgent(accountId, id);
    if (!agent) throw errors.agentNotFound(id);
    const [versions, notes] = await Promise.all([this.#repo.listVersions(id), this.#repo.versionNotes(id)]);
    return versions.map((v) => {
      const note = notes.get(v.version);
      return {
        version: v.version,
        is_published: note?.published_at != null,
        last_modification_timestamp: v.created_at,
        ...(note?.base_version != null ? { base_version: note.base_version } : {}),
        ...(note?.version_title != null ? { version_title: note.version_title } : {}),
        ...((note?.version_description ?? v.config.version_description) != null ? { version_description: note?.version_description ?? v.config.version_description! } : {}),
      };
    });
  }

  async deleteAgent(accountId: string, id: string): Promise<void> {
    const deleted = await this.#repo.deleteAgent(accountId, id).finally(() => this.#evictHead(id));
    if (!deleted) throw errors.agentNotFound(id);
  }

  /** The version a call runs on: the latest when `version` is omitted. */
  async resolveVersion(accountId: string, id: string, version?: number): Promise<ResolvedAgentVersion> {
    return this.#resolve(await this.#head(accountId, id), accountId, id, version);
  }

  /**
   * The version a new call runs on. With `fresh` false and several processes sharing the store,
   * the agent's head may come from memory, and the answer carries the guard the insert must check;
   * when that check fails, ask again with `fresh` true (the head is read from the store).
   */
  async resolveForCall(accountId: string, id: string, version: number | undefined, fresh: boolean): Promise<ResolvedForCall> {
    const guarded = this.#guardedHeads;
    if (!guarded) return { agent: await this.resolveVersion(accountId, id, version), guard: undefined };
    const cached = fresh ? undefined : guarded.get(id);
    if (cached && cached.account_id === accountId) {
      return { agent: await this.#resolve(cached, accountId, id, version), guard: cached.latest_version };
    }
    const head = await this.#repo.findAgent(accountId, id);
    if (head) guarded.set(id, head);
    else guarded.delete(id);
    return { agent: await this.#resolve(head, accountId, id, version), guard: undefined };
  }

  async #resolve(agent: AgentHead | undefined, accountId: string, id: string, version?: number): Promise<ResolvedAgentVersion> {
    // Versions are immutable, so a version read once can be served from memory; whether the agent
    // exists under this account, and which version is latest, is its head's answer.
    if (!agent) throw errors.agentNotFound(id);
    const wanted = version ?? agent.latest_version;
    if (wanted > agent.latest_version) throw errors.agentVersionNotFound(id, wanted);
    const cacheKey = `${id}:${wanted}`;
    const cached = this.#versions.get(cacheKey);
    if (cached) return cached;
    const found = await this.#repo.findAgentVersion(accountId, id, wanted);
    if (!found) throw version === undefined ? errors.agentNotFound(id) : errors.agentVersionNotFound(id, wanted);
    const resolved: ResolvedAgentVersion = { agentId: id, version: found.version.version, config: completeAgentConfig(found.version.config), engine: found.version.engine };
    this.#versions.set(cacheKey, resolved);
    return resolved;
  }

  // --- internals ----------------------------------------------------------------------------

  async #head(accountId: string, id: string): Promise<AgentHead | undefined> {
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
    this.#guardedHeads?.delete(id);
  }

  #newEngine<D>(accountId: string, id: string, definition: D): EngineRecord<D> {
    const now = this.#clock.now();
    return { id, account_id: accountId, definition, created_at: now, updated_at: now };
  }

  async #engine<K extends EngineKind>(kind: K, accountId: string, id: string): Promise<EngineRecord<EngineDefinitions[K]>> {
    const record = await this.#repo.findEngine(kind, accountId, id);
    if (!record) throw engineNotFound(kind, id);
    return record;
  }

  /** Applies the fields given over the stored definition, checks the result, stores it. */
  async #updateEngine<K extends EngineKind>(
    kind: K,
    accountId: string,
    id: string,
    changes: Partial<EngineDefinitions[K]>,
    check: (merged: EngineDefinitions[K]) => string | null,
  ): Promise<EngineRecord<EngineDefinitions[K]>> {
    return this.#store.transaction(async (trx) => {
      const record = await this.#repo.findEngine(kind, accountId, id, trx);
      if (!record) throw engineNotFound(kind, id);
      const definition: EngineDefinitions[K] = { ...record.definition, ...withoutUndefined(changes) };
      assertValid(check(definition));
      const now = Math.max(this.#clock.now(), record.updated_at);
      await this.#repo.updateEngine(kind, accountId, id, definition, now, trx);
      return { ...record, definition, updated_at: now };
    });
  }

  async #deleteEngine(kind: EngineKind, accountId: string, id: string): Promise<void> {
    await this.#store.transaction(async (trx) => {
      if (!(await this.#repo.findEngine(kind, accountId, id, trx))) throw engineNotFound(kind, id);
      const users = await this.#repo.agentsUsingEngine(accountId, id, trx);
      if (users.length > 0) {
        throw errors.inUse(kind === 'conversation_flows' ? 'conversation flow' : 'service LLM', id, `agent ${users[0]}`);
      }
      await this.#repo.deleteEngine(kind, accountId, id, trx);
    });
  }

  async #snapshotEngine(accountId: string, engine: ResponseEngine, db: Executor): Promise<EngineSnapshot> {
    if (engine.type === 'custom_llm') return { ...engine };
    if (engine.type === 'conversation_flow') {
      const flow = await this.#repo.findEngine('conversation_flows', accountId, engine.conversation_flow_id, db);
      if (!flow) throw errors.conversationFlowNotFound(engine.conversation_flow_id);
      return { ...engine, definition: flow.definition };
    }
    const llm = await this.#repo.findEngine('service_llms', accountId, engine.llm_id, db);
    if (!llm) throw errors.serviceLlmNotFound(engine.llm_id);
    return { ...engine, definition: llm.definition };
  }
}

function assertValid(problem: string | null): void {
  if (problem) throw errors.invalidRequest(problem);
}

function refuse(problem: SpeechProblem | null): void {
  if (problem) throw errors.invalidRequest(problem.message, problem.details);
}

function engineNotFound(kind: EngineKind, id: string) {
  return kind === 'conversation_flows' ? errors.conversationFlowNotFound(id) : errors.serviceLlmNotFound(id);
}


function flowView(record: EngineRecord<ConversationFlowDefinition>): ConversationFlowView {
  return {
    conversation_flow_id: record.id,
    ...record.definition,
    created_at: record.created_at,
    last_modification_timestamp: record.updated_at,
  };
}

function llmView(record: EngineRecord<ServiceLlmDefinition>): ServiceLlmView {
  return {
    llm_id: record.id,
    ...record.definition,
    accepted_without_effect: llmFieldsWithoutEffect(record.definition),
    created_at: record.created_at,
    last_modification_timestamp: record.updated_at,
  };
}

function agentView(id: string, version: number, config: AgentConfig, createdAt: number, versionCreatedAt: number): AgentView {
  const complete = completeAgentConfig(config);
  return { agent_id: id, version, ...complete, accepted_without_effect: agentFieldsWithoutEffect(complete), created_at: createdAt, last_modification_timestamp: versionCreatedAt };
}

/** The config with Retell's `opt_out_sensitive_data_storage` applied; a contradiction is a 400. */
function optedOut(config: AgentConfig, changes: AgentUpdate): AgentConfig {
  const result = withStorageOptOut(config, changes);
  if (typeof result === 'string') throw errors.invalidRequest(result);
  return result;
}
