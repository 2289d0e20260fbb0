import { accessTokenErrorCode, type AccessTokenErrorCode } from '../domain/errors.ts';
import type { ClaimedLease } from '../domain/call-checkpoint.ts';
import type { AdmitCallInput, AdmittedCall } from '../services/call-lifecycle.ts';
import { embeddedAnalysis, formatTranscript, fromTranscriptObject, toTranscriptWithToolCalls } from '../voice/index.ts';
import type { Logger } from '../lib/logger.ts';
import type { TimerHandle } from '../lib/scheduler.ts';
import { CallSession, type EndOptions, type SessionCallService, type SessionDeps } from './call-session.ts';
import type { CallEndpoint } from './endpoint.ts';

/** The call lifecycle's operations the registry uses. */
export interface RunningCallService extends SessionCallService {
  /** The web call's admission: redeems an access token. */
  joinCall(token: string): Promise<AdmittedCall>;
  /** Checks an access token without redeeming it (throws the access-token errors as joinCall does). */
  checkToken(token: string): Promise<void>;
  /** Any other transport's admission (src/services/call-lifecycle.ts). */
  admitCall(input: AdmitCallInput): Promise<AdmittedCall>;
  /** An outbound phone call placed earlier was answered (registered -> ongoing). */
  answerCall(callId: string): Promise<AdmittedCall>;
  /** Renews this process's leases on the calls it holds; returns those it still held. */
  renewLeases(callIds: readonly string[]): Promise<string[]>;
  /** Takes over calls whose lease lapsed (their server is gone), each by one server only. */
  claimLapsedCalls(limit?: number): Promise<ClaimedLease[]>;
}

/** The reason a call taken over from a lost server ends with (status `error`: the service failed it). */
export const SERVER_LOST = 'error_server_lost';

/**
 * Why a call cannot start: its access token (`token_invalid`, `token_expired`, `token_used`), the
 * server is shutting down, the embedded recogniser has no room for one more call now
 * (`recogniser_busy`: nothing was redeemed, the same token may join once a call has ended), or
 * the admission failed for another reason (`failed`). A transport tells its caller in its own
 * words (the web call: an `error` message and a close code; SIP: 486 Busy Here).
 */
export type RefusalReason = AccessTokenErrorCode | 'shutting_down' | 'recogniser_busy' | 'failed';

/** A call the registry will not start; `reason` says why, `message` says it to a person. */
export class CallRefused extends Error {
  readonly reason: RefusalReason;
  constructor(reason: RefusalReason, message: string) {
    super(message);
    this.name = 'CallRefused';
    this.reason = reason;
  }
}

/** How the registry closes: see `SessionRegistry.close`. */
export interface RegistryCloseOptions {
  /**
   * The time the calls have to end and store their results, in milliseconds from the call to
   * `close` (default: no limit; the analysis then gets its usual SessionTimings.analysisTimeoutMs).
   * Each call's post-call analysis is cut off in time to be stored by then (see EndOptions).
   */
  graceMs?: number;
}

export interface SessionRegistryDeps extends Omit<SessionDeps, 'calls' | 'log'> {
  calls: RunningCallService;
  /** The media component's logger; each call logs through a child with its call id. */
  log: Logger;
  /** Counts the calls of lost servers this process ended (switchboard_calls_recovered_total). */
  recoveredCalls?: { inc(): void };
  /**
   * Gives back the memory the calls left, once this process has held no call for IDLE_RELEASE_MS
   * (the runtime's: src/lib/idle-memory.ts, a full collection of the main thread and a trim).
   */
  releaseIdleMemory?: () => Promise<void>;
}

/** How long the process holds no call before the memory its calls left is given back (releaseIdleMemory), ms. */
export const IDLE_RELEASE_MS = 2_000;

/**
 * Runs every ongoing call of this process, each on the endpoint that carries it: a web call
 * joined with its access token (`join`), or a call another transport admitted (`run`). `close()`
 * (shutdown; the runtime calls it, never a transport) refuses new calls and ends every call with
 * `server_shutdown`, storing its results and emitting call.finished as usual, within a grace if
 * one is given.
 */
export class SessionRegistry {
  readonly #d: SessionRegistryDeps;
  readonly #sessions = new Map<string, CallSession>();
  readonly #starting = new Set<Promise<unknown>>();
  /**
   * Calls between their admission and the recogniser stream their session opens (at the end of
   * its start): each holds a place in the recogniser's room meanwhile, so two joins cannot both
   * take its last place. A hold lapses as soon as its call's stream is open (then counted by the
   * recogniser itself) or its start failed: created calls that never join hold nothing.
   */
  #joining = 0;
  #closing: Promise<void> | undefined;
  /** The calls' deadline once closing, on the sessions' scheduler clock (ms). */
  #deadline: number | undefined;
  /** Set while the process holds no call, until the memory is given back (releaseIdleMemory). */
  #idleTimer: TimerHandle | undefined;

  constructor(deps: SessionRegistryDeps) {
    this.#d = deps;
  }

  /** The media component's logger (transports log their refusals here too). */
  get log(): Logger {
    return this.#d.log;
  }

  /** Calls in progress. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The session of an ongoing call, if this process holds it. */
  get(callId: string): CallSession | undefined {
    return this.#sessions.get(callId);
  }

  /**
   * The web call's way in: redeems the access token (registered -> ongoing) and runs the call on
   * `endpoint`. Throws CallRefused for a bad, expired or used token, or during shutdown.
   */
  join(token: string, endpoint: CallEndpoint): Promise<CallSession> {
    return this.#admitAndRun(async () => {
      try {
        return await this.#d.calls.joinCall(token);
      } catch (error) {
        const code = accessTokenErrorCode(error);
        if (code) throw new CallRefused(code, (error as Error).message);
        this.#d.log.error({ err: error }, 'join failed');
        throw new CallRefused('failed', 'The call could not be joined; try again.');
      }
    }, endpoint);
  }

  /**
   * Checks that `token` could join now (authentic, unexpired, unused) without redeeming it; throws
   * CallRefused as `join` does. A transport that negotiates media before joining (WebRTC) refuses a
   * bad token with this before it spends anything on it; `join` still decides, once, at the end.
   */
  async check(token: string): Promise<void> {
    if (this.#closing) throw new CallRefused('shutting_down', 'The server is shutting down; try again shortly.');
    try {
      await this.#d.calls.checkToken(token);
    } catch (error) {
      const code = accessTokenErrorCode(error);
      if (code) throw new CallRefused(code, (error as Error).message);
      this.#d.log.error({ err: error }, 'token check failed');
      throw new CallRefused('failed', 'The call could not be joined; try again.');
    }
  }

  /**
   * Any other transport's way in: admits the call (src/services/call-lifecycle.ts, `admitCall`:
   * made and started at once, ongoing and leased here, with `call_type` from the input) and runs
   * it on `endpoint`. Throws CallRefused during shutdown, and the admission's AppError (unknown
   * agent, input that does not fit it, the account's concurrency limit) as it is.
   */
  admit(input: AdmitCallInput, endpoint: CallEndpoint): Promise<CallSession> {
    return this.#admitAndRun(() => this.#d.calls.admitCall(input), endpoint);
  }

  /**
   * A call this server placed (create-phone-call) was answered: it becomes ongoing and runs on
   * `endpoint`. Throws CallRefused: answered already or rang out (its token's codes), or shutdown.
   */
  answer(callId: string, endpoint: CallEndpoint): Promise<CallSession> {
    return this.#admitAndRun(async () => {
      try {
        return await this.#d.calls.answerCall(callId);
      } catch (error) {
        const code = accessTokenErrorCode(error);
        if (code) throw new CallRefused(code, (error as Error).message);
        throw error;
      }
    }, endpoint);
  }

  /** Runs an admitted call on `endpoint` (every way in ends here). */
  #admitAndRun(admission: () => Promise<AdmittedCall>, endpoint: CallEndpoint): Promise<CallSession> {
    if (this.#closing) return Promise.reject(new CallRefused('shutting_down', 'The server is shutting down; try again shortly.'));
    if (this.recogniserBusy()) {
      return Promise.reject(new CallRefused('recogniser_busy', "This server's speech recogniser is serving as many calls as it takes; try again once one has ended."));
    }
    this.#joining++;
    this.#stopIdleTimer();
    const work = admission().then((admitted) => this.#run(admitted, endpoint));
    this.#starting.add(work);
    return work.finally(() => {
      this.#joining--;
      this.#starting.delete(work);
      this.#whenIdle();
    });
  }

  /** With no call held or being admitted, the memory is given back after IDLE_RELEASE_MS, unless a call comes first. */
  #whenIdle(): void {
    const release = this.#d.releaseIdleMemory;
    if (!release || this.#closing || this.#sessions.size > 0 || this.#joining > 0 || this.#idleTimer) return;
    this.#idleTimer = this.#d.scheduler.setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#sessions.size > 0 || this.#joining > 0) return;
      release().catch((error: unknown) => this.#d.log.warn({ err: error }, 'giving back idle memory failed'));
    }, IDLE_RELEASE_MS);
  }

  #stopIdleTimer(): void {
    if (this.#idleTimer) this.#d.scheduler.clear(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  /**
   * Whether the embedded recogniser (SttProvider.capacity) has no room for one more call, counting
   * the calls being admitted now. A transport that answers before it admits (Twilio's voice
   * webhook) asks this to answer busy; admission asks it again.
   */
  recogniserBusy(): boolean {
    const room = this.#d.providers.stt.capacity?.();
    return room !== undefined && room.open + this.#joining >= room.max;
  }

  async #run({ call, agent }: AdmittedCall, endpoint: CallEndpoint): Promise<CallSession> {
    const session = new CallSession(call, agent, endpoint, { ...this.#d, log: this.#d.log.child({ callId: call.call_id, transport: endpoint.transport }) });
    this.#sessions.set(session.callId, session);
    let starting: Promise<void> | undefined;
    if (this.#closing) {
      // Shutdown began while the call was being admitted: end it cleanly at once.
      void session.end('server_shutdown', this.#endOptions());
    } else {
      starting = session.start();
    }
    // The endpoint hands the caller's audio and actions to the session from now on: the session's
    // pipeline exists (start makes it before its first wait) and queues what comes while its
    // recogniser opens, so the caller's first words after `call_started` are not dropped.
    endpoint.attach(session.sink);
    await starting;
    void session.done.then(() => {
      this.#sessions.delete(session.callId);
      this.#whenIdle();
    });
    return session;
  }

  /**
   * Refuses new joins, ends every call with server_shutdown (calls already ending too: their
   * analysis is held to the same deadline) and resolves once their results are stored. With
   * `graceMs`, each call's analysis is cut off in time for that (the embedded analysis instead).
   * Idempotent: later calls return the first call's promise.
   */
  close(options: RegistryCloseOptions = {}): Promise<void> {
    if (this.#closing) return this.#closing;
    const { graceMs } = options;
    if (graceMs !== undefined && Number.isFinite(graceMs)) this.#deadline = this.#d.scheduler.now() + Math.max(0, graceMs);
    this.#stopIdleTimer();
    this.#closing = (async () => {
      await Promise.allSettled([...this.#starting]);
      const sessions = [...this.#sessions.values()];
      await Promise.allSettled(sessions.map((s) => s.end('server_shutdown', this.#endOptions())));
      await Promise.allSettled(sessions.map((s) => s.done));
    })();
    return this.#closing;
  }

  /** update-call changed `callId` (a 'call_updates' notification): its session, if here, applies it now. */
  onCallUpdated(callId: string): void {
    this.#sessions.get(callId)?.onUpdated('pushed');
  }

  /** Notifications may have been missed: every call here reads its variables again. */
  resyncCalls(): void {
    for (const session of this.#sessions.values()) session.onUpdated('resync');
  }

  /**
   * Renews the leases of the calls this process holds (main.ts runs it every third of
   * CALL_LEASE_TTL_MS). Calls still joining are leased by their join, for a whole TTL. A call whose
   * lease another server has taken over (this process stalled past it) is stopped here,
   * `error_server_lost` (its end is recorded once: by whichever server ends it first).
   */
  async renewLeases(): Promise<void> {
    const ids = [...this.#sessions.keys()];
    const held = new Set(await this.#d.calls.renewLeases(ids));
    for (const id of ids) {
      const session = this.#sessions.get(id);
      if (!session || session.ended || held.has(id)) continue;
      // Another server took the call over (this process stalled past its lease) and has ended it:
      // stop the media here too, so the client is not left talking to a call that is over.
      this.#d.log.warn({ callId: id }, 'lease on a call lost to another server; the call stops here');
      void session.end(SERVER_LOST);
    }
  }

  /**
   * Ends the calls whose server was lost (main.ts runs it at start and every
   * CALL_RECOVERY_INTERVAL_MS): each lapsed lease is claimed by one server, which ends its call
   * `error_server_lost` with its last checkpoint (transcript, where the conversation was), the
   * embedded analysis, and the recording's track files where they are on this server's disk;
   * finishCall records call.finished once. Returns how many calls it ended.
   */
  async recoverLapsed(batchSize = 50): Promise<number> {
    if (this.#closing) return 0;
    let ended = 0;
    for (const lease of await this.#d.calls.claimLapsedCalls(batchSize)) {
      // Still held here (this process was too slow to renew): the claim renewed it; the call goes on.
      if (this.#sessions.has(lease.callId)) continue;
      try {
        if (await this.#endLost(lease)) ended += 1;
      } catch (error) {
        // The claim lapses again and a sweep (here or on another server) retries.
        this.#d.log.error({ err: error, callId: lease.callId }, 'ending a call of a lost server failed');
      }
    }
    return ended;
  }

  async #endLost({ callId, checkpoint }: ClaimedLease): Promise<boolean> {
    const utterances = fromTranscriptObject(checkpoint?.transcript_object ?? []);
    if (checkpoint) this.#d.rememberNames?.(callId, checkpoint.names);
    let recordingPath: string | null = null;
    try {
      recordingPath = await this.#d.recordings.recover(callId, checkpoint?.sample_rate);
    } catch (error) {
      this.#d.log.error({ err: error, callId }, 'recovering the recording failed');
    }
    const finished = await this.#d.calls.finishCall(callId, {
      reason: SERVER_LOST,
      transcript: formatTranscript(utterances) || null,
      transcriptObject: checkpoint?.transcript_object ?? null,
      transcriptWithToolCalls: toTranscriptWithToolCalls(utterances, [], checkpoint?.node_transitions ?? []),
      recordingPath,
      callAnalysis: embeddedAnalysis({ transcript: utterances, disconnectionReason: SERVER_LOST, reachedEnd: checkpoint?.reached_end ?? false }),
      ...(checkpoint?.current_node_id ? { currentNodeId: checkpoint.current_node_id } : {}),
      ...(checkpoint?.current_state ? { currentState: checkpoint.current_state } : {}),
    });
    if (finished) {
      this.#d.recoveredCalls?.inc();
      this.#d.log.warn({ callId, utterances: utterances.length, recording: recordingPath !== null }, 'call of a lost server ended');
    }
    return finished;
  }

  #endOptions(): EndOptions {
    return this.#deadline === undefined ? {} : { deadline: this.#deadline };
  }
}
