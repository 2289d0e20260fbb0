/**
 * A call's life from the media side: admitting it (a web call's token join, or a transport's own
 * admission), finishing it once with its results, its lease and checkpoint while it runs, taking
 * over the calls of a lost server, and the sweep of tokens never used. CallService keeps the API's
 * use cases; the media runtime and the periodic tasks drive this one.
 */
import type { Clock } from '../lib/clock.ts';
import { errors } from '../domain/errors.ts';
import type { AgentOverride } from '../domain/agent.ts';
import type { Call, CallAnalysis, CallChanges, CallMedia, CallType, LatencyReport, PhoneCallFields, ToolTranscriptEntry, TranscriptEntry } from '../domain/call.ts';
import { type DisconnectionReason, isFinal, statusesThatCanBecome, statusForReason } from '../domain/call-status.ts';
import { storableText } from '../domain/text.ts';
import type { AgentEventKind } from '../domain/webhook.ts';
import type { CallCheckpoint, ClaimedLease } from '../domain/call-checkpoint.ts';
import type { CallRepository } from '../storage/call.repository.ts';
import type { LeaseRepository } from '../storage/lease.repository.ts';
import type { Executor, Store } from '../storage/store.ts';
import type { AccessTokenSigner } from './access-token.ts';
import type { AgentService, ResolvedAgentVersion } from './agent.service.ts';
import { type EngineCapabilityCheck, type NewCallInput, type RecogniserCapacity, newCallRecord } from './call-record.ts';
import type { CallRetention } from './call.service.ts';
import { type CallView, toCallView } from './call.view.ts';
import type { EventOutbox } from './events.ts';
import type { RecordingLinks } from './recording-link.ts';

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
  /** How the call was carried (its endpoint's measure). */
  media?: CallMedia | null;
  /** Where the conversation ended (flow node id); left as it was when undefined. */
  currentNodeId?: string | null;
  /** Where the conversation ended (service-LLM state); left as it was when undefined. */
  currentState?: string | null;
  /** Where the call was transferred (reason `call_transfer`): a number or SIP URI. */
  transferDestination?: string | null;
  /**
   * How long before this outcome is stored the call ended, ms (its media stopped; the recording,
   * analysis and storing came after). The end timestamp and duration are the call's, not the
   * storing's. Default 0.
   */
  endedMsAgo?: number;
}

/** A call admitted to run: ongoing, leased by this server, with the agent version it runs. */
export interface AdmittedCall {
  call: Call;
  agent: ResolvedAgentVersion;
}

/**
 * What a transport other than the web call's token join admits a call with (a phone call that
 * rings, a call driven from code): the account and agent, and what create-web-call's body would
 * carry. The account's concurrency limit applies, as it does to create-web-call.
 */
export interface AdmitCallInput extends NewCallInput {
  accountId: string;
  /** Calls registered or ongoing the account may have at once (null: no limit). */
  concurrencyLimit: number | null;
  callType: CallType;
  /** A phone call's number, direction and carrier id (issue 24). */
  phone?: PhoneCallFields;
}

export interface CallLifecycleDeps {
  store: Store;
  calls: CallRepository;
  agents: AgentService;
  signer: AccessTokenSigner;
  outbox: EventOutbox;
  retention: CallRetention;
  clock: Clock;
  /** Base of the absolute URLs in the `call.finished` payload. */
  publicBaseUrl: string;
  /** Makes the payload's signed `recording_url`. */
  recordingLinks?: RecordingLinks;
  checkEngine?: EngineCapabilityCheck;
  /** The server's embedded recogniser's room: a call it cannot hold is refused at creation (issue 25). */
  recogniserCapacity?: RecogniserCapacity;
  /** Leases on ongoing calls and their checkpoints. */
  leases: LeaseRepository;
  /** This process's id: the holder of the leases of the calls it runs (Runtime.serverId). */
  serverId: string;
  /** How long a lease lasts unless renewed, ms (CALL_LEASE_TTL_MS). */
  leaseTtlMs: number;
}

/** Where an agent's own webhooks go for one call, and which of Retell's events (null: `call.finished`). */
interface AgentWebhook {
  url: string | null;
  events: readonly AgentEventKind[] | null;
  /** The agent's `webhook_timeout_ms` (the call's override, else its version's); null: the server's timeout. */
  timeoutMs: number | null;
}
const NO_AGENT_WEBHOOK: AgentWebhook = { url: null, events: null, timeoutMs: null };

/** A call's admission, lease, checkpoint and end (see the module's comment). */
export class CallLifecycle {
  readonly #d: CallLifecycleDeps;

  constructor(deps: CallLifecycleDeps) {
    this.#d = deps;
  }

  /**
   * The web call's admission: redeems an access token (registered -> ongoing, leased in the same
   * commit). Refuses a forged, expired or used token with the registry's access-token errors.
   */
  async joinCall(token: string): Promise<AdmittedCall> {
    const claims = this.#d.signer.verify(token);
    if (!claims) throw errors.accessTokenInvalid();
    const now = this.#d.clock.now();
    if (now > claims.expiresAt) throw errors.accessTokenExpired();
    // Read outside the transaction (SQLite's one connection): where call_started goes, if anywhere.
    const registered = await this.#d.calls.findById(claims.callId);
    const hook = registered ? await this.#agentWebhook(registered) : NO_AGENT_WEBHOOK;
    const claimed = await this.#d.store.transaction(async (trx) => {
      if (!(await this.#d.calls.claimToken(claims.callId, claims.tokenId, now, trx))) return null;
      await this.#d.calls.update(claims.callId, { call_status: 'ongoing', start_timestamp: now, updated_at: now }, trx);
      // Ongoing and leased in one commit: no call is ever ongoing without a holder.
      await this.#d.leases.insert(claims.callId, this.#d.serverId, now + this.#d.leaseTtlMs, trx);
      const started = await this.#d.calls.findById(claims.callId, trx);
      if (started) await this.#recordAgentEvent(trx, hook, 'call_started', started.account_id, this.#view(started));
      return started;
    });
    if (!claimed) {
      const row = await this.#d.calls.findById(claims.callId);
      if (!row) throw errors.accessTokenInvalid('call_gone');
      if (row.token_used_at !== null) throw errors.accessTokenUsed();
      throw errors.accessTokenExpired();
    }
    const agent = await this.#d.agents.resolveVersion(claimed.account_id, claimed.agent_id, claimed.agent_version);
    return { call: claimed, agent };
  }

  /**
   * Checks an access token without redeeming it: a forged, expired or used token is refused with
   * the same errors as `joinCall`. A transport that opens media before it joins (WebRTC: the offer
   * is answered first, the token redeemed once media flows) checks with this, so bad tokens are
   * refused at once while a token stays unused until the call really starts.
   */
  async checkToken(token: string): Promise<void> {
    const claims = this.#d.signer.verify(token);
    if (!claims) throw errors.accessTokenInvalid();
    const now = this.#d.clock.now();
    if (now > claims.expiresAt) throw errors.accessTokenExpired();
    const row = await this.#d.calls.findById(claims.callId);
    if (!row || row.token_id !== claims.tokenId) throw errors.accessTokenInvalid('call_gone');
    if (row.token_used_at !== null) throw errors.accessTokenUsed();
    if (row.call_status !== 'registered' || now > row.token_expires_at) throw errors.accessTokenExpired();
  }

  /**
   * Any other transport's admission: makes the call (checked as create-web-call checks it) and
   * starts it at once, ongoing and leased by this server in one commit, with no token to redeem.
   * Throws AppError: the agent does not exist (`agent_not_found`), the input does not fit it
   * (`invalid_request`), or the account is at its concurrency limit.
   */
  async admitCall(input: AdmitCallInput): Promise<AdmittedCall> {
    const now = this.#d.clock.now();
    const agent = await this.#d.agents.resolveVersion(input.accountId, input.agent_id, input.agent_version);
    const row: Call = {
      ...newCallRecord(this.#d, input.accountId, input, agent, now, { callType: input.callType, tokenExpiresAt: now, phone: input.phone }),
      call_status: 'ongoing',
      start_timestamp: now,
      token_used_at: now,
    };
    const hook = await this.#agentWebhook(row);
    await this.#d.store.transaction(async (trx) => {
      const limit = input.concurrencyLimit;
      // Counted and inserted in one transaction, under the account's lock: holds across servers.
      if (limit !== null && (await this.#d.calls.countLiveLocked(input.accountId, trx)) >= limit) throw errors.concurrencyLimitReached(limit);
      await this.#d.calls.insert(row, trx);
      await this.#d.leases.insert(row.call_id, this.#d.serverId, now + this.#d.leaseTtlMs, trx);
      await this.#recordAgentEvent(trx, hook, 'call_started', row.account_id, this.#view(row));
    });
    return { call: row, agent };
  }

  /**
   * An outbound phone call placed by create-phone-call: made `registered` (ringing) with the
   * account's concurrency limit counted, ongoing only once answered (`answerCall`). It may wait
   * `ringMs` for that; past it the token sweep ends it `dial_no_answer`.
   */
  async registerCall(input: AdmitCallInput, ringMs: number): Promise<Call> {
    const now = this.#d.clock.now();
    const agent = await this.#d.agents.resolveVersion(input.accountId, input.agent_id, input.agent_version);
    const row = newCallRecord(this.#d, input.accountId, input, agent, now, { callType: input.callType, tokenExpiresAt: now + ringMs, phone: input.phone });
    await this.#d.store.transaction(async (trx) => {
      const limit = input.concurrencyLimit;
      if (limit !== null && (await this.#d.calls.countLiveLocked(input.accountId, trx)) >= limit) throw errors.concurrencyLimitReached(limit);
      await this.#d.calls.insert(row, trx);
    });
    return row;
  }

  /** Calls of the account registered or ongoing now (what its concurrency limit counts). */
  async countLiveCalls(accountId: string): Promise<number> {
    return this.#d.store.transaction((trx) => this.#d.calls.countLiveLocked(accountId, trx));
  }

  /** The carrier's id of a call placed and still ringing (Twilio's CallSid), once the carrier gave it. */
  async setTelephonyIdentifier(callId: string, telephonyIdentifier: string): Promise<void> {
    await this.#d.calls.update(callId, { telephony_identifier: telephonyIdentifier, updated_at: this.#d.clock.now() });
  }

  /**
   * A placed call was answered: registered -> ongoing, leased by this server, in one commit, once
   * (its token is spent as a web call's join spends it). Throws `access_token_used` or
   * `access_token_expired` (the registry's refusals) when it was answered already or rang out.
   */
  async answerCall(callId: string): Promise<AdmittedCall> {
    const now = this.#d.clock.now();
    const row = await this.#d.calls.findById(callId);
    if (!row) throw errors.accessTokenInvalid('call_gone');
    const claimed = await this.#d.store.transaction(async (trx) => {
      if (!(await this.#d.calls.claimToken(callId, row.token_id, now, trx))) return null;
      await this.#d.calls.update(callId, { call_status: 'ongoing', start_timestamp: now, updated_at: now }, trx);
      await this.#d.leases.insert(callId, this.#d.serverId, now + this.#d.leaseTtlMs, trx);
      return this.#d.calls.findById(callId, trx);
    });
    if (!claimed) throw row.token_used_at !== null ? errors.accessTokenUsed() : errors.accessTokenExpired();
    const agent = await this.#d.agents.resolveVersion(claimed.account_id, claimed.agent_id, claimed.agent_version);
    return { call: claimed, agent };
  }

  /** The current row of a call (the session reads its variables again before each turn). */
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
    const hook = await this.#agentWebhook(before);
    return this.#d.store.transaction(async (trx) => {
      const row = await this.#d.calls.findById(callId, trx);
      if (!row || isFinal(row.call_status)) return false;
      const now = Math.max(this.#d.clock.now(), row.start_timestamp ?? row.created_at);
      const endedAt = Math.max(now - Math.max(0, Math.round(outcome.endedMsAgo ?? 0)), row.start_timestamp ?? row.created_at);
      const changes: CallChanges = {
        call_status: statusForReason(outcome.reason),
        disconnection_reason: outcome.reason,
        end_timestamp: endedAt,
        duration_ms: row.start_timestamp === null ? 0 : endedAt - row.start_timestamp,
        // Said or generated during the call: made storable rather than refused (domain/text.ts).
        transcript: outcome.transcript == null ? null : storableText(outcome.transcript),
        transcript_object: outcome.transcriptObject ?? null,
        transcript_with_tool_calls: outcome.transcriptWithToolCalls ?? null,
        recording_path: outcome.recordingPath ?? null,
        call_analysis: outcome.callAnalysis ?? null,
        latency: outcome.latency ?? null,
        media: outcome.media ?? null,
        updated_at: now,
      };
      if (outcome.currentNodeId !== undefined) changes.current_node_id = outcome.currentNodeId;
      if (outcome.currentState !== undefined) changes.current_state = outcome.currentState;
      if (outcome.transferDestination !== undefined) changes.transfer_destination = outcome.transferDestination;
      const finished: Call = { ...row, ...changes };
      Object.assign(changes, await this.#d.retention.apply(finished, row.data_storage_setting));
      if (!(await this.#d.calls.transition(callId, statusesThatCanBecome(statusForReason(outcome.reason)), changes, trx))) return false;
      await this.#d.leases.delete(callId, trx);
      const view = this.#view({ ...row, ...changes });
      // With Retell's webhook_events the agent's URL gets those instead of call.finished.
      await this.#d.outbox.record(trx, { accountId: row.account_id, kind: 'call.finished', data: view, agentWebhookUrl: hook.events === null ? hook.url : null, agentWebhookTimeoutMs: hook.timeoutMs });
      // The analysis is made before the call is written (media/call-session.ts), so both go now.
      for (const kind of ['call_ended', 'call_analyzed'] as const) await this.#recordAgentEvent(trx, hook, kind, row.account_id, view);
      return true;
    });
  }

  /**
   * Ends every registered call whose token expired unused (`error_user_not_joined`; a placed phone
   * call that rang out unanswered and unreported, `dial_no_answer`); returns how many.
   */
  async sweepUnjoined(batchSize = 100): Promise<number> {
    let ended = 0;
    for (const row of await this.#d.calls.findExpiredUnjoined(this.#d.clock.now(), batchSize)) {
      const reason = row.direction === 'outbound' ? 'dial_no_answer' : 'error_user_not_joined';
      if (await this.finishCall(row.call_id, { reason })) ended += 1;
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

  /**
   * The agent's `webhook_url` and `webhook_events` for this call: each the call's override, else
   * its agent version's.
   */
  async #agentWebhook(row: Call): Promise<AgentWebhook> {
    const override: AgentOverride['agent'] = row.agent_override?.agent;
    const agent =
      override?.webhook_url !== undefined && override.webhook_events !== undefined
        ? null
        : await this.#d.agents.resolveVersion(row.account_id, row.agent_id, row.agent_version).catch(() => null);
    return {
      url: override?.webhook_url !== undefined ? override.webhook_url : (agent?.config.webhook_url ?? null),
      events: override?.webhook_events !== undefined ? override.webhook_events : (agent?.config.webhook_events ?? null),
      timeoutMs: override?.webhook_timeout_ms ?? agent?.config.webhook_timeout_ms ?? null,
    };
  }

  /** Records one of Retell's agent-level events for the agent's URL, when its `webhook_events` list it. */
  async #recordAgentEvent(db: Executor, hook: AgentWebhook, kind: AgentEventKind, accountId: string, view: CallView): Promise<void> {
    if (hook.url === null || !hook.events?.includes(kind)) return;
    await this.#d.outbox.record(db, { accountId, kind, data: view, agentWebhookUrl: hook.url, agentWebhookTimeoutMs: hook.timeoutMs });
  }

  #view(row: Call): CallView {
    const links = this.#d.recordingLinks;
    return toCallView(row, { publicBaseUrl: this.#d.publicBaseUrl, ...(links ? { recordingUrl: (callId: string) => links.url(callId) } : {}) });
  }
}
