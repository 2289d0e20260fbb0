import { hash, randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import { jsonByteLength } from '../lib/json.ts';
import { storableText } from '../domain/text.ts';
import type { RateLimiter } from '../lib/token-bucket.ts';
import { AppError, errors } from '../domain/errors.ts';
import { type AgentOverride, settingsWithOverride } from '../domain/agent.ts';
import type { Call, CallAnalysis, CallChanges, LatencyReport, ToolTranscriptEntry, TranscriptEntry } from '../domain/call.ts';
import { type DisconnectionReason, isFinal, statusesThatCanBecome, statusForReason } from '../domain/call-status.ts';
import { type StoragePolicy, isLessRestrictive } from '../domain/storage-policy.ts';
import type { CallRepository } from '../storage/call.repository.ts';
import type { LeaseRepository } from '../storage/lease.repository.ts';
import type { Notifications } from '../storage/pg-notifications.ts';
import type { CallCheckpoint, ClaimedLease } from '../domain/call-checkpoint.ts';
import type { Store } from '../storage/store.ts';
import { callStats } from './call-stats.ts';
import type { CallStatsQuery, CallStatsResponse } from './call-stats.schemas.ts';
import type { AccessTokenSigner } from './access-token.ts';
import type { RecordingLinks } from './recording-link.ts';
import type { AgentService, ResolvedAgentVersion } from './agent.service.ts';
import type { Principal } from './account.service.ts';
import type { EventOutbox } from './events.ts';
import { type CallView, toCallView } from './call.view.ts';
import type { CreateWebCallBody, ListCallsBody, UpdateCallBody } from './call.schemas.ts';

/** Largest `metadata` accepted: 50 KB read as 50 × 1024 bytes of its UTF-8 JSON text. */
export const METADATA_MAX_BYTES = 51_200;
/** Compare-and-set attempts of an update-call before it takes the row lock in a transaction. */
const UPDATE_CAS_ATTEMPTS = 3;
/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export type CreateWebCallInput = Static<typeof CreateWebCallBody>;
export type UpdateCallInput = Static<typeof UpdateCallBody>;
export type ListCallsInput = Static<typeof ListCallsBody>;

export interface CreateWebCallOptions {
  /**
   * Take a token from the account's create-web-call bucket (default true). The /demo page's
   * calls are admitted by the demo's own limits instead, so they never spend the operator's.
   */
  accountRateLimit?: boolean;
}

/** What the outcome of a call contributes to its record when it ends. */
export interface CallOutcome {
  reason: DisconnectionReason;
  transcript?: string | null;
  transcriptObject?: TranscriptEntry[] | null;
  /** Utterances interleaved with function calls; null (or absent) when the call made none. */
  transcriptWithToolCalls?: ToolTranscriptEntry[] | null;
  recordingPath?: string | null;
  callAnalysis?: CallAnalysis | null;
  latency?: LatencyReport | null;
  /** Where the conversation ended (flow node id); left as it was when undefined. */
  currentNodeId?: string | null;
  /** Where the conversation ended (service-LLM state); left as it was when undefined. */
  currentState?: string | null;
}

/** Removes what a storage policy forbids from a finished call's record (and its files). */
export interface CallRetention {
  /** Changes that bring `call` within `policy`; may delete files it no longer allows. */
  apply(call: Call, policy: StoragePolicy): Promise<CallChanges>;
  /** Deletes the call's files (recording) when the call itself is deleted. */
  deleteArtifacts(call: Call): Promise<void>;
}

/** Checks, at create-web-call, that this server can run the agent's engine (e.g. an LLM is configured). */
export type EngineCapabilityCheck = (agent: ResolvedAgentVersion, override: AgentOverride | undefined) => string | null;

export interface CallServiceDeps {
  store: Store;
  calls: CallRepository;
  agents: AgentService;
  signer: AccessTokenSigner;
  outbox: EventOutbox;
  retention: CallRetention;
  /** The accounts' create-web-call rate (PostgreSQL: shared by every server). */
  rateLimiter: RateLimiter;
  clock: Clock;
  accessTokenTtlMs: number;
  /** Base of the absolute URLs in call objects. */
  publicBaseUrl: string;
  /** Makes each read's signed `recording_url` (without it, the API-key route's URL). */
  recordingLinks?: RecordingLinks;
  checkEngine?: EngineCapabilityCheck;
  /** Leases on ongoing calls and their checkpoints. */
  leases: LeaseRepository;
  /** This process's id: the holder of the leases of the calls it joins (Runtime.serverId). */
  serverId: string;
  /** How long a lease lasts unless renewed, ms (CALL_LEASE_TTL_MS). */
  leaseTtlMs: number;
  /** Tells the server holding a call that update-call changed it ('call_updates'). */
  notifications: Notifications;
}

/** Web calls: creation, retrieval, update, listing, deletion, joining and finishing. */
export class CallService {
  readonly #d: CallServiceDeps;

  readonly #recordingUrl: ((callId: string) => string) | undefined;

  constructor(deps: CallServiceDeps) {
    this.#d = deps;
    const links = deps.recordingLinks;
    this.#recordingUrl = links && ((callId) => links.url(callId));
  }

  /**
   * Creates a web call. With an idempotency key, a retry with the same body within 24 h returns
   * the call made the first time (`replayed: true`); a different body is refused.
   */
  async createWebCall(principal: Principal, input: CreateWebCallInput, idempotencyKey?: string, options: CreateWebCallOptions = {}) {
    const now = this.#d.clock.now();
    if (principal.trialEndsAt !== null && now >= principal.trialEndsAt) throw errors.trialEnded();
    if (options.accountRateLimit !== false) {
      let taken = this.#d.rateLimiter.take(principal.accountId, principal.rateLimitPerMinute);
      if (taken instanceof Promise) taken = await taken;
      if (!taken.ok) throw errors.rateLimited(taken.retryAfterMs);
    }

    const limit = principal.concurrencyLimit;
    if (idempotencyKey === undefined && limit === null) {
      // The agent's head may come from memory (PostgreSQL): the insert checks it is still the
      // agent's latest, and when it is not, the call is made again from a fresh read.
      const first = await this.#d.agents.resolveForCall(principal.accountId, input.agent_id, input.agent_version, false);
      const row = this.#newCall(principal, input, first.agent, now);
      if (await this.#d.calls.insert(row, undefined, first.guard)) return { call: this.#viewWithToken(row), replayed: false };
      const fresh = await this.#d.agents.resolveForCall(principal.accountId, input.agent_id, input.agent_version, true);
      const retried = this.#newCall(principal, input, fresh.agent, now);
      await this.#d.calls.insert(retried);
      return { call: this.#viewWithToken(retried), replayed: false };
    }

    const requestHash = idempotencyKey === undefined ? '' : hashRequest(input);
    if (idempotencyKey !== undefined) {
      const replay = await this.#replay(principal.accountId, idempotencyKey, requestHash, now);
      if (replay) return { call: replay, replayed: true };
    }
    const agent = await this.#d.agents.resolveVersion(principal.accountId, input.agent_id, input.agent_version);
    const row = this.#newCall(principal, input, agent, now);
    try {
      await this.#d.store.transaction(async (trx) => {
        // Counted and inserted in one transaction, under the account's lock: holds across servers.
        if (limit !== null && (await this.#d.calls.countLiveLocked(principal.accountId, trx)) >= limit) {
          throw errors.concurrencyLimitReached(limit);
        }
        if (idempotencyKey === undefined) {
          await this.#d.calls.insert(row, trx);
          return;
        }
        const existing = await this.#d.calls.findIdempotencyKey(principal.accountId, idempotencyKey, trx);
        if (existing && now - existing.created_at < IDEMPOTENCY_WINDOW_MS) throw RACE_LOST;
        await this.#d.calls.insert(row, trx);
        await this.#d.calls.putIdempotencyKey(
          { account_id: principal.accountId, idempotency_key: idempotencyKey, request_hash: requestHash, call_id: row.call_id, created_at: now },
          trx,
        );
      });
    } catch (error) {
      if (idempotencyKey === undefined) throw error;
      // Another request with the same key committed first: answer as its replay.
      const replay = await this.#replay(principal.accountId, idempotencyKey, requestHash, now);
      if (replay) return { call: replay, replayed: true };
      throw error === RACE_LOST ? errors.idempotencyKeyInFlight() : error;
    }
    return { call: this.#viewWithToken(row), replayed: false };
  }

  /** A new call's record on `agent`; throws when the input does not fit the agent. */
  #newCall(principal: Principal, input: CreateWebCallInput, agent: ResolvedAgentVersion, now: number): Call {
    checkCallInput(agent, input);
    this.#d.agents.checkCallSettings(agent, input.agent_override?.agent);
    const capability = this.#d.checkEngine?.(agent, input.agent_override);
    if (capability) throw errors.invalidRequest(capability);

    const settings = settingsWithOverride(agent.config, input.agent_override);
    return {
      call_id: newId('call'),
      account_id: principal.accountId,
      call_type: 'web_call',
      agent_id: agent.agentId,
      agent_version: agent.version,
      agent_name: settings.agent_name ?? null,
      call_status: 'registered',
      data_storage_setting: settings.data_storage_setting,
      created_at: now,
      start_timestamp: null,
      end_timestamp: null,
      duration_ms: null,
      disconnection_reason: null,
      metadata: input.metadata ?? {},
      agent_override: input.agent_override ?? null,
      service_llm_dynamic_variables: input.service_llm_dynamic_variables ?? {},
      override_dynamic_variables: null,
      custom_attributes: null,
      current_node_id: input.current_node_id ?? null,
      current_state: input.current_state ?? null,
      transcript: null,
      transcript_object: null,
      transcript_with_tool_calls: null,
      recording_path: null,
      call_analysis: null,
      latency: null,
      token_id: randomUUID().slice(0, 13),
      token_expires_at: now + this.#d.accessTokenTtlMs,
      token_used_at: null,
      updated_at: now,
    };
  }

  async getCall(accountId: string, callId: string): Promise<CallView> {
    return this.#view(await this.#find(accountId, callId));
  }

  /** Applies every field or none; answers the complete call. */
  async updateCall(accountId: string, callId: string, input: UpdateCallInput): Promise<CallView> {
    if (input.metadata !== undefined && jsonByteLength(input.metadata) > METADATA_MAX_BYTES) {
      throw errors.invalidRequest(`metadata is larger than 50 KB (${METADATA_MAX_BYTES} bytes of UTF-8 JSON)`);
    }
    // Read, then write only if what the changes were computed from is unchanged: two statements
    // and no transaction. A finished call whose storage setting tightens is trimmed (and its
    // recording deleted) in one transaction instead, as is an update that keeps losing races.
    for (let attempt = 0; attempt < UPDATE_CAS_ATTEMPTS; attempt++) {
      const read = await this.#d.calls.findVersioned(accountId, callId);
      if (!read) throw errors.callNotFound(callId);
      const next = input.data_storage_setting;
      if (next !== undefined && next !== read.call.data_storage_setting && isFinal(read.call.call_status)) break;
      const changes = await this.#updateChanges(read.call, input);
      if (await this.#d.calls.updateIfUnchanged(read, changes)) return this.#updated({ ...read.call, ...changes });
    }
    const updated = await this.#d.store.transaction(async (trx) => {
      const row = await this.#d.calls.findForUpdate(accountId, callId, trx);
      if (!row) throw errors.callNotFound(callId);
      const changes = await this.#updateChanges(row, input);
      await this.#d.calls.update(callId, changes, trx);
      return { ...row, ...changes };
    });
    return this.#updated(updated);
  }

  /** An updated call's view; an ongoing call's change is pushed to the server holding it (any server of the store), which applies it at once. */
  async #updated(call: Call): Promise<CallView> {
    if (call.call_status === 'ongoing') await this.#d.notifications.notify('call_updates', call.call_id);
    return this.#view(call);
  }

  /** The changes `input` makes to `row`; a finished call is trimmed to a tightened storage setting. */
  async #updateChanges(row: Call, input: UpdateCallInput): Promise<CallChanges> {
    const current = row.data_storage_setting;
    const next = input.data_storage_setting;
    if (next !== undefined && isLessRestrictive(next, current)) {
      throw errors.invalidRequest(
        `data_storage_setting cannot be loosened from ${current} to ${next}; it can only stay or become stricter ` +
          '(everything < everything_except_pii < basic_attributes_only)',
        { current, requested: next },
      );
    }
    const changes: CallChanges = { updated_at: Math.max(this.#d.clock.now(), row.updated_at) };
    if (input.metadata !== undefined) changes.metadata = input.metadata;
    if (input.custom_attributes !== undefined) changes.custom_attributes = { ...row.custom_attributes, ...input.custom_attributes };
    if (input.override_dynamic_variables === null) changes.override_dynamic_variables = null;
    else if (input.override_dynamic_variables !== undefined) {
      changes.override_dynamic_variables = { ...row.override_dynamic_variables, ...input.override_dynamic_variables };
    }
    if (next !== undefined && next !== current) {
      changes.data_storage_setting = next;
      // A finished call's record is trimmed to the new policy now; an ongoing one when it ends.
      if (isFinal(row.call_status)) Object.assign(changes, await this.#d.retention.apply(row, next));
    }
    return changes;
  }

  async listCalls(accountId: string, input: ListCallsInput): Promise<CallView[]> {
    let after: { createdAt: number; callId: string } | undefined;
    if (input.pagination_key !== undefined) {
      const anchor = await this.#d.calls.find(accountId, input.pagination_key);
      if (!anchor) throw errors.invalidRequest('pagination_key is not a call of this account');
      after = { createdAt: anchor.created_at, callId: anchor.call_id };
    }
    const rows = await this.#d.calls.list({
      accountId,
      agentIds: input.filter_criteria?.agent_id,
      statuses: input.filter_criteria?.call_status,
      startFrom: input.filter_criteria?.start_timestamp?.lower_threshold,
      startTo: input.filter_criteria?.start_timestamp?.upper_threshold,
      reasons: input.filter_criteria?.disconnection_reason,
      successful: input.filter_criteria?.call_successful,
      text: input.filter_criteria?.query,
      descending: input.sort_order !== 'ascending',
      limit: input.limit ?? 50,
      after,
    });
    return rows.map((row) => this.#view(row));
  }

  /** The overview's per-day statistics (services/call-stats.ts). */
  async callStats(accountId: string, query: CallStatsQuery): Promise<CallStatsResponse> {
    return callStats(this.#d.store, this.#d.clock.now(), accountId, query);
  }

  async deleteCall(accountId: string, callId: string): Promise<void> {
    const row = await this.#find(accountId, callId);
    if (row.call_status === 'ongoing') {
      throw new AppError('call_ongoing', 'conflict', `Call ${callId} is ongoing; end it before deleting it.`);
    }
    if (!(await this.#d.calls.delete(accountId, callId))) throw errors.callNotFound(callId);
    await this.#d.retention.deleteArtifacts(row);
  }

  // --- the call's life, driven by the media runtime and the sweeper ---------------------------

  /**
   * Redeems an access token: the call moves registered -> ongoing. Refuses a forged, expired or
   * used token with a reason the client can show.
   */
  async joinCall(token: string): Promise<{ call: Call; agent: ResolvedAgentVersion }> {
    const claims = this.#d.signer.verify(token);
    if (!claims) throw new AppError('token_invalid', 'unauthenticated', 'The access token is not valid.');
    const now = this.#d.clock.now();
    if (now > claims.expiresAt) throw new AppError('token_expired', 'unauthenticated', 'The access token has expired.');
    const claimed = await this.#d.store.transaction(async (trx) => {
      if (!(await this.#d.calls.claimToken(claims.callId, claims.tokenId, now, trx))) return null;
      await this.#d.calls.update(claims.callId, { call_status: 'ongoing', start_timestamp: now, updated_at: now }, trx);
      // Ongoing and leased in one commit: no call is ever ongoing without a holder.
      await this.#d.leases.insert(claims.callId, this.#d.serverId, now + this.#d.leaseTtlMs, trx);
      return this.#d.calls.findById(claims.callId, trx);
    });
    if (!claimed) {
      const row = await this.#d.calls.findById(claims.callId);
      if (!row) throw new AppError('token_invalid', 'unauthenticated', 'The call of this access token no longer exists.');
      if (row.token_used_at !== null) throw new AppError('token_used', 'unauthenticated', 'The access token was already used.');
      throw new AppError('token_expired', 'unauthenticated', 'The access token has expired.');
    }
    const agent = await this.#d.agents.resolveVersion(claimed.account_id, claimed.agent_id, claimed.agent_version);
    return { call: claimed, agent };
  }

  /** Current row of a call, for the media runtime (e.g. to read overrides before each turn). */
  async readCall(callId: string): Promise<Call | undefined> {
    return this.#d.calls.findById(callId);
  }

  /**
   * Ends a registered or ongoing call once: status, timestamps, outcome trimmed to its storage
   * policy, and `call.finished` in the same transaction. Returns false if it had already ended.
   */
  async finishCall(callId: string, outcome: CallOutcome): Promise<boolean> {
    const before = await this.#d.calls.findById(callId);
    if (!before || isFinal(before.call_status)) return false;
    // Read outside the transaction: on SQLite the transaction holds the only connection.
    const webhookUrl = await this.#agentWebhookUrl(before);
    return this.#d.store.transaction(async (trx) => {
      const row = await this.#d.calls.findById(callId, trx);
      if (!row || isFinal(row.call_status)) return false;
      const now = Math.max(this.#d.clock.now(), row.start_timestamp ?? row.created_at);
      const changes: CallChanges = {
        call_status: statusForReason(outcome.reason),
        disconnection_reason: outcome.reason,
        end_timestamp: now,
        duration_ms: row.start_timestamp === null ? 0 : now - row.start_timestamp,
        // Said or generated during the call: made storable rather than refused (domain/text.ts).
        transcript: outcome.transcript == null ? null : storableText(outcome.transcript),
        transcript_object: outcome.transcriptObject ?? null,
        transcript_with_tool_calls: outcome.transcriptWithToolCalls ?? null,
        recording_path: outcome.recordingPath ?? null,
        call_analysis: outcome.callAnalysis ?? null,
        latency: outcome.latency ?? null,
        updated_at: now,
      };
      if (outcome.currentNodeId !== undefined) changes.current_node_id = outcome.currentNodeId;
      if (outcome.currentState !== undefined) changes.current_state = outcome.currentState;
      const finished: Call = { ...row, ...changes };
      Object.assign(changes, await this.#d.retention.apply(finished, row.data_storage_setting));
      if (!(await this.#d.calls.transition(callId, statusesThatCanBecome(statusForReason(outcome.reason)), changes, trx))) return false;
      await this.#d.leases.delete(callId, trx);
      await this.#d.outbox.record(trx, {
        accountId: row.account_id,
        kind: 'call.finished',
        data: this.#view({ ...row, ...changes }),
        agentWebhookUrl: webhookUrl,
      });
      return true;
    });
  }

  /** Ends every registered call whose token expired unused (`error_user_not_joined`); returns how many. */
  async sweepUnjoined(batchSize = 100): Promise<number> {
    let ended = 0;
    for (const row of await this.#d.calls.findExpiredUnjoined(this.#d.clock.now(), batchSize)) {
      if (await this.finishCall(row.call_id, { reason: 'error_user_not_joined' })) ended += 1;
    }
    return ended;
  }

  // --- leases: who holds an ongoing call, and taking over the calls of a lost server ----------

  /**
   * Renews this process's leases on the calls it holds (`callIds`) for another CALL_LEASE_TTL_MS;
   * returns those whose lease it still had (the others were ended or taken over by another server).
   */
  async renewLeases(callIds: readonly string[]): Promise<string[]> {
    return this.#d.leases.renew(this.#d.serverId, callIds, this.#d.clock.now() + this.#d.leaseTtlMs);
  }

  /** Saves an ongoing call's checkpoint; false when this process no longer holds its lease. */
  async checkpointCall(callId: string, checkpoint: CallCheckpoint): Promise<boolean> {
    return this.#d.leases.checkpoint(callId, this.#d.serverId, checkpoint);
  }

  /**
   * Takes over up to `limit` calls whose lease lapsed (their server is gone), each by one server
   * only; the caller ends them with finishCall. On the embedded store, which one server uses at a
   * time, every lease of another server has lapsed (the server that held it has stopped).
   */
  async claimLapsedCalls(limit = 50): Promise<ClaimedLease[]> {
    const now = this.#d.clock.now();
    return this.#d.leases.claimLapsed(this.#d.serverId, now, now + this.#d.leaseTtlMs, limit, this.#d.store.dialect === 'sqlite');
  }

  async countByStatus() {
    return this.#d.calls.countByStatus();
  }

  // --- internals ----------------------------------------------------------------------------

  /** The agent's `webhook_url` for this call: the call's override, else its agent version's. */
  async #agentWebhookUrl(row: Call): Promise<string | null> {
    const override = row.agent_override?.agent;
    if (override?.webhook_url !== undefined) return override.webhook_url;
    const agent = await this.#d.agents.resolveVersion(row.account_id, row.agent_id, row.agent_version).catch(() => null);
    return agent?.config.webhook_url ?? null;
  }

  async #find(accountId: string, callId: string): Promise<Call> {
    const row = await this.#d.calls.find(accountId, callId);
    if (!row) throw errors.callNotFound(callId);
    return row;
  }

  async #replay(accountId: string, key: string, requestHash: string, now: number): Promise<CallView | null> {
    const existing = await this.#d.calls.findIdempotencyKey(accountId, key);
    if (!existing || now - existing.created_at >= IDEMPOTENCY_WINDOW_MS) return null;
    if (existing.request_hash !== requestHash) throw errors.idempotencyKeyReused();
    const row = await this.#d.calls.find(accountId, existing.call_id);
    if (!row) return null;
    return this.#viewWithToken(row);
  }

  #viewWithToken(row: Call): CallView {
    const token = this.#d.signer.sign({ callId: row.call_id, tokenId: row.token_id, expiresAt: row.token_expires_at });
    return toCallView(row, { accessToken: token, publicBaseUrl: this.#d.publicBaseUrl, recordingUrl: this.#recordingUrl });
  }

  #view(row: Call): CallView {
    return toCallView(row, { publicBaseUrl: this.#d.publicBaseUrl, recordingUrl: this.#recordingUrl });
  }
}

const RACE_LOST = new Error('idempotency key taken by a concurrent request');

/** Rules of the spec that need the agent: node and state names, engine-specific fields. */
function checkCallInput(agent: ResolvedAgentVersion, input: CreateWebCallInput): void {
  const engine = agent.engine;
  if (input.current_node_id !== undefined) {
    if (engine.type !== 'conversation_flow') {
      throw errors.invalidRequest('current_node_id applies only to agents whose response engine is a conversation flow');
    }
    if (!engine.definition.nodes.some((node) => node.id === input.current_node_id)) {
      throw errors.invalidRequest(`current_node_id "${input.current_node_id}" is not a node of the agent's conversation flow`);
    }
  }
  if (input.current_state !== undefined) {
    if (engine.type !== 'service_llm') {
      throw errors.invalidRequest('current_state applies only to agents whose response engine is a service LLM');
    }
    if (!(engine.definition.states ?? []).some((state) => state.name === input.current_state)) {
      throw errors.invalidRequest(`current_state "${input.current_state}" is not a state of the agent's service LLM`);
    }
  }
  if (input.agent_override?.conversation_flow !== undefined && engine.type !== 'conversation_flow') {
    throw errors.invalidRequest('agent_override.conversation_flow applies only to conversation-flow agents');
  }
  if (input.agent_override?.service_llm !== undefined && engine.type !== 'service_llm') {
    throw errors.invalidRequest('agent_override.service_llm applies only to service-LLM agents');
  }
  if (input.metadata !== undefined && jsonByteLength(input.metadata) > METADATA_MAX_BYTES) {
    throw errors.invalidRequest(`metadata is larger than 50 KB (${METADATA_MAX_BYTES} bytes of UTF-8 JSON)`);
  }
}

function hashRequest(input: CreateWebCallInput): string {
  return hash('sha256', canonicalJson(input), 'hex');
}

/** JSON with object keys sorted, so key order does not change an idempotency hash. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

