import { hash } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Clock } from '../lib/clock.ts';
import { jsonByteLength } from '../lib/json.ts';
import type { RateLimiter } from '../lib/token-bucket.ts';
import { errors } from '../domain/errors.ts';
import type { Call, CallChanges } from '../domain/call.ts';
import { isFinal } from '../domain/call-status.ts';
import { type StoragePolicy, isLessRestrictive } from '../domain/storage-policy.ts';
import type { CallRepository } from '../storage/call.repository.ts';
import type { Notifications } from '../storage/pg-notifications.ts';
import type { Store } from '../storage/store.ts';
import { callStats } from './call-stats.ts';
import type { CallStatsQuery, CallStatsResponse } from './call-stats.schemas.ts';
import type { AccessTokenSigner } from './access-token.ts';
import type { RecordingLinks } from './recording-link.ts';
import type { AgentService, ResolvedAgentVersion } from './agent.service.ts';
import type { Principal } from './account.service.ts';
import type { EventOutbox } from './events.ts';
import { type CallView, toCallView } from './call.view.ts';
import { type EngineCapabilityCheck, METADATA_MAX_BYTES, type RecogniserCapacity, newCallRecord } from './call-record.ts';
import type { CreateWebCallBody, ListCallsBody, UpdateCallBody } from './call.schemas.ts';
import { toCallFilter } from './call-filters.ts';

export { METADATA_MAX_BYTES };
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

/** Removes what a storage policy forbids from a finished call's record (and its files). */
export interface CallRetention {
  /** Changes that bring `call` within `policy`; may delete files it no longer allows. */
  apply(call: Call, policy: StoragePolicy): Promise<CallChanges>;
  /** Deletes the call's files (recording) when the call itself is deleted. */
  deleteArtifacts(call: Call): Promise<void>;
}

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
  /** The server's embedded recogniser's room: a call it cannot hold is refused at creation (issue 25). */
  recogniserCapacity?: RecogniserCapacity;
  /** Tells the server holding a call that update-call changed it ('call_updates'). */
  notifications: Notifications;
}

/**
 * The API's use cases of calls: creation, retrieval, update, listing, statistics and deletion. A
 * call's life while it runs (admission, lease, checkpoint, end) is CallLifecycle's
 * (src/services/call-lifecycle.ts).
 */
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

  /** A new web call's record on `agent`; throws when the input does not fit the agent. */
  #newCall(principal: Principal, input: CreateWebCallInput, agent: ResolvedAgentVersion, now: number): Call {
    return newCallRecord(this.#d, principal.accountId, input, agent, now, { callType: 'web_call', tokenExpiresAt: now + this.#d.accessTokenTtlMs });
  }

  /** A call's current row whatever its account (routes that checked access another way: a signed recording link, the demo). */
  async readCall(callId: string): Promise<Call | undefined> {
    return this.#d.calls.findById(callId);
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
      ...toCallFilter(input.filter_criteria),
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
      throw errors.callOngoing(callId);
    }
    if (!(await this.#d.calls.delete(accountId, callId))) throw errors.callNotFound(callId);
    await this.#d.retention.deleteArtifacts(row);
  }

  async countByStatus() {
    return this.#d.calls.countByStatus();
  }

  // --- internals ----------------------------------------------------------------------------

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

