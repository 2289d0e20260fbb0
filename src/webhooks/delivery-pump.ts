import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Batcher } from '../lib/batcher.ts';
import { CappedMap } from '../lib/capped-map.ts';
import { CoalescedRun } from '../lib/coalesced-run.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import type { Executor, Store } from '../storage/store.ts';
import type { ClaimedDelivery, DeliveryAttempt, DeliveryChanges, WebhookRepository } from '../storage/webhook.repository.ts';
import { type AttemptDecision, decideAttempt } from './attempt-outcome.ts';
import type { WebhookHttpClient, SendResult } from './http-client.ts';
import { deliveryBody, generateWebhookSecret, retellDeliveryBody, retellSignature, signedHeaders } from './signer.ts';
import { isAgentEventKind } from '../domain/webhook.ts';

export interface DeliveryPumpOptions {
  store: Store;
  webhooks: WebhookRepository;
  client: WebhookHttpClient;
  box: SecretBox;
  clock: Clock;
  log: Logger;
  /** Delays before the 2nd, 3rd, ... attempts, in milliseconds. */
  retryScheduleMs: readonly number[];
  /** Whole-attempt timeout in milliseconds; the lease on a claimed delivery is this plus a margin. */
  timeoutMs: number;
  /** A subscription whose attempts have all failed for this long (milliseconds) is disabled as `failing`. */
  disableAfterMs: number;
  /** Deliveries in flight at most. */
  concurrency: number;
  /** Deliveries in flight per endpoint at most. */
  endpointConcurrency: number;
  /** Uniform in [0, 1), for the retry delays' jitter (default Math.random). */
  random?: () => number;
}

/** An attempt decided and waiting to be recorded with others (group commit). */
interface RecordPlan {
  delivery: ClaimedDelivery;
  /** When the attempt finished, epoch milliseconds. */
  now: number;
  decision: AttemptDecision;
  attempt: DeliveryAttempt;
  changes: DeliveryChanges;
}

/**
 * How long a claimed delivery stays ours: twice the attempt timeout plus a second, so the attempt
 * (bounded by the timeout) and its recording finish well before another worker may take it over.
 */
export function leaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + 1_000;
}
/** Retries never take more than this share of the slots, so first attempts never wait behind them. */
const RETRY_SHARE = 0.5;
const CLAIM_BATCH = 256;
/** Attempts recorded per transaction at most. */
const RECORD_BATCH = 500;
/** Decrypted secrets kept in memory, by their encrypted form. */
const SECRET_CACHE_SIZE = 10_000;

/**
 * The delivery worker's claim -> send -> record step. A round claims due deliveries (leases), sends
 * them, records each attempt and schedules retries, and claims again as sends finish while more is
 * due. Two lanes: first attempts (and manual redeliveries) are claimed before retries, and retries
 * are held to half the slots. At most `endpointConcurrency` deliveries per endpoint and
 * `concurrency` in all are in flight.
 *
 * The worker (`WebhookDispatcher`) runs a round on every wake; tests and tools that drive time with
 * a manual clock run rounds themselves, on the same object.
 */
export class DeliveryPump {
  readonly #o: DeliveryPumpOptions;
  readonly #refillAt: number;
  readonly #owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #perEndpoint = new Map<string, number>();
  readonly #secrets = new CappedMap<string, string>(SECRET_CACHE_SIZE);
  #retriesInFlight = 0;
  /** Deliveries handled so far (sent, or cancelled because their webhook went away). */
  #handled = 0;
  /** Claims, one at a time; one asked for while another runs follows it (the webhook pump's rounds). */
  readonly #claims = new CoalescedRun(() => this.#fill(), {
    stopped: () => this.#closed,
    onError: (error) => this.#log.error({ err: error }, 'webhook claim failed'),
    idle: () => this.#endRoundIfIdle(),
  });
  /** The last fill stopped for lack of slots: completions should look for more. */
  #backlog = false;
  /** The round in progress: settles once no claim is running and nothing is in flight. */
  #round: { handledBefore: number; promise: Promise<number>; resolve: (handled: number) => void } | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  /** Aborts the sends in flight (close, once its grace is over). */
  readonly #abort = new AbortController();
  /** Deliveries whose send was aborted: no attempt is recorded, their leases are released at close. */
  readonly #abandoned: string[] = [];
  readonly #log: Logger;
  readonly #random: () => number;
  /**
   * Attempts are recorded in batches, one transaction each (one commit for many deliveries), and
   * one transaction at a time: what finishes meanwhile goes in the next, larger batch, instead of
   * taking more pool connections (PostgreSQL) or queueing on the one connection (SQLite).
   */
  readonly #recorder: Batcher<RecordPlan>;

  constructor(options: DeliveryPumpOptions) {
    this.#o = options;
    this.#log = options.log;
    this.#random = options.random ?? Math.random;
    this.#refillAt = Math.max(1, Math.floor(options.concurrency / 8));
    this.#recorder = new Batcher((plans) => options.store.transaction((tx) => this.#recordBatch(plans, tx)), RECORD_BATCH, {
      maxConcurrentFlushes: 1,
    });
  }

  /**
   * Runs a round: claims what is due now into the free slots and sends it, claiming again (in
   * batches of slots) as sends finish while more is due. Resolves with the deliveries handled in
   * the round (sent, or cancelled because their webhook went away; a send aborted by `close` is
   * none) once no claim is running and none of its sends is in flight. A call while a round runs
   * joins it: the round claims again now, and the call resolves when the round ends. Never
   * rejects: a failed claim is logged and ends that claim. Once closed, claims nothing.
   */
  runOnce(): Promise<number> {
    if (!this.#round) {
      let resolve!: (handled: number) => void;
      const promise = new Promise<number>((r) => (resolve = r));
      this.#round = { handledBefore: this.#handled, promise, resolve };
    }
    const { promise } = this.#round;
    void this.#pump();
    return promise;
  }

  /**
   * Stops claiming and lets the sends in flight finish for up to `graceMs` (Infinity: no limit;
   * each ends within the attempt timeout anyway); then aborts the rest. An aborted send is not an
   * attempt: nothing is recorded, and its delivery's lease is released, so it stays pending and
   * due. Attempts already answered are recorded before this resolves. Idempotent: later calls
   * return the first call's promise.
   */
  close(graceMs: number): Promise<void> {
    this.#closing ??= this.#close(graceMs);
    return this.#closing;
  }

  async #close(graceMs: number): Promise<void> {
    this.#closed = true;
    // The grace runs from now: what is left of it after a claim in progress closed.
    const cut = Number.isFinite(graceMs) ? setTimeout(() => this.#abort.abort(new Error('the webhook worker is closing')), Math.max(0, graceMs)) : null;
    try {
      // A claim in progress either starts its deliveries or hands them back (the pump is closed).
      await this.#claims.running;
      await Promise.allSettled([...this.#inFlight]);
    } finally {
      if (cut) clearTimeout(cut);
    }
    const abandoned = this.#abandoned.splice(0);
    if (abandoned.length === 0) return;
    try {
      await this.#o.webhooks.release(abandoned, this.#owner);
      this.#log.info({ deliveries: abandoned.length, graceMs }, 'webhook sends cut off at close; their deliveries stay pending');
    } catch (error) {
      // Not lost: the leases lapse (PostgreSQL) or are voided at the next start (SQLite).
      this.#log.warn({ err: error, deliveries: abandoned.length }, 'releasing cut-off webhook deliveries failed; their leases will lapse');
    }
  }

  #pump(): Promise<void> {
    return this.#claims.request();
  }

  /** Ends the round in progress once no claim is running and nothing is in flight. */
  #endRoundIfIdle(): void {
    const round = this.#round;
    if (!round || this.#claims.running || this.#inFlight.size > 0) return;
    this.#round = null;
    round.resolve(this.#handled - round.handledBefore);
  }

  /** Claims as much as the free slots allow, lane 0 first, and starts sending it. */
  async #fill(): Promise<void> {
    const { concurrency, endpointConcurrency } = this.#o;
    const retryCap = Math.max(1, Math.floor(concurrency * RETRY_SHARE));
    for (;;) {
      if (this.#closed) return;
      const free = concurrency - this.#inFlight.size;
      if (free <= 0) {
        this.#backlog = true;
        return;
      }
      const now = this.#o.clock.now();
      const excludeEndpoints = [...this.#perEndpoint].filter(([, n]) => n >= endpointConcurrency).map(([key]) => key);
      const claimArgs = { nowMs: now, leaseMs: leaseMs(this.#o.timeoutMs), owner: this.#owner, excludeEndpoints };
      const firstLimit = Math.min(free, CLAIM_BATCH);
      const first = await this.#o.webhooks.claim({ ...claimArgs, lane: 0, limit: firstLimit });
      const retryLimit = Math.min(free - first.length, retryCap - this.#retriesInFlight, CLAIM_BATCH);
      const retries = retryLimit > 0 ? await this.#o.webhooks.claim({ ...claimArgs, lane: 1, limit: retryLimit }) : [];
      const giveBack: string[] = [];
      for (const delivery of [...first, ...retries]) {
        const count = this.#perEndpoint.get(delivery.endpoint_key) ?? 0;
        if (count >= endpointConcurrency || this.#closed) giveBack.push(delivery.id);
        else this.#start(delivery);
      }
      await this.#o.webhooks.release(giveBack, this.#owner);
      // More may be due if a claim came back full or deliveries were handed back for an endpoint's cap.
      const more = first.length === firstLimit || (retryLimit > 0 && retries.length === retryLimit);
      this.#backlog = more || giveBack.length > 0;
      if (!more) return;
    }
  }

  #start(delivery: ClaimedDelivery): void {
    const key = delivery.endpoint_key;
    const isRetry = delivery.lane === 1;
    this.#perEndpoint.set(key, (this.#perEndpoint.get(key) ?? 0) + 1);
    if (isRetry) this.#retriesInFlight += 1;
    let handled = true;
    const task: Promise<void> = this.#deliver(delivery)
      .then((attempted) => {
        handled = attempted;
      })
      .catch((error: unknown) => this.#log.error({ err: error, delivery_id: delivery.id }, 'webhook delivery failed unexpectedly'))
      .finally(() => {
        const left = (this.#perEndpoint.get(key) ?? 1) - 1;
        if (left <= 0) this.#perEndpoint.delete(key);
        else this.#perEndpoint.set(key, left);
        if (isRetry) this.#retriesInFlight -= 1;
        this.#inFlight.delete(task);
        if (handled) this.#handled += 1;
        // Refill in batches: a claim per completed delivery would cost more than the delivery.
        const free = this.#o.concurrency - this.#inFlight.size;
        if (this.#backlog && (free >= this.#refillAt || this.#inFlight.size === 0)) void this.#pump();
        this.#endRoundIfIdle();
      });
    this.#inFlight.add(task);
  }

  /** Sends and records one delivery; false when the send was aborted (nothing recorded). */
  async #deliver(d: ClaimedDelivery): Promise<boolean> {
    const o = this.#o;
    const startedAt = o.clock.now();
    const hook = d.webhook;
    if (d.webhook_id !== null && hook?.status !== 'active') {
      const reason = hook === null ? 'the webhook was deleted' : 'the webhook is disabled';
      await o.webhooks.updateDelivery(d.id, {
        status: 'cancelled', next_attempt_at: null, last_error: reason, locked_until: null, locked_by: null, updated_at: startedAt,
      });
      return true;
    }
    // From here `hook` is the active subscription, or null for an agent's webhook_url.
    const url = hook?.url ?? d.url;
    const secret = hook !== null ? this.#decrypt(hook.secret_encrypted) : await this.#agentSecret(d.account_id);
    const retell = isAgentEventKind(d.kind);
    const body = retell ? retellDeliveryBody(d.kind, d.data) : deliveryBody(d.kind, d.data, startedAt);
    // webhook-id is the event id: the same on every attempt, so receivers can drop duplicates.
    const headers = signedHeaders(secret, d.kind, d.event_id, startedAt, body);
    // Retell's own receivers (its SDKs' `verify`) read this one; ours are signed as ever beside it.
    if (retell) headers['x-retell-signature'] = retellSignature(secret, body, startedAt);
    const signal = this.#abort.signal;
    let result: SendResult;
    try {
      // An agent's webhook_timeout_ms shortens the attempt; never past the server's, which the lease is built on.
      result = await o.client.send(url, headers, body, signal, d.timeout_ms !== null ? { timeoutMs: Math.min(d.timeout_ms, o.timeoutMs) } : {});
    } catch (error) {
      if (!signal.aborted) throw error;
      this.#abandoned.push(d.id);
      return false;
    }
    // The tenant's delivery log says only which rule refused the address; the operator's says what it was.
    if (result.failure === 'refused') this.#log.warn({ delivery_id: d.id, detail: result.detail ?? result.error }, 'webhook destination refused');
    await this.#record(d, startedAt, result);
    return true;
  }

  /** Decides what the attempt means and queues it to be recorded with others (group commit). */
  #record(d: ClaimedDelivery, startedAt: number, result: SendResult): Promise<void> {
    const now = this.#o.clock.now();
    const attempt = d.attempts + 1;
    const decision = decideAttempt({
      attempt,
      manual: d.manual === 1,
      lane: d.lane,
      result,
      nowMs: now,
      retryScheduleMs: this.#o.retryScheduleMs,
      random: this.#random,
    });
    const changes: DeliveryChanges = {
      status: decision.status,
      lane: decision.lane,
      manual: 0,
      attempts: attempt,
      next_attempt_at: decision.nextAttemptAt,
      last_attempt_at: startedAt,
      last_status_code: result.statusCode,
      last_error: result.error,
      last_latency_ms: result.latencyMs,
      updated_at: now,
    };
    if (decision.status === 'delivered') changes.delivered_at = now;
    return this.#recorder.submit({
      delivery: d,
      now,
      decision,
      attempt: {
        delivery_id: d.id,
        attempt,
        account_id: d.account_id,
        started_at: startedAt,
        status_code: result.statusCode,
        latency_ms: result.latencyMs,
        outcome: decision.outcome,
        error: result.error,
        response_excerpt: result.excerpt,
        next_attempt_at: decision.nextAttemptAt,
      },
      changes,
    });
  }

  /** Records a batch of attempts in `tx`: the log, plain successes in one statement, the rest one by one. */
  async #recordBatch(plans: RecordPlan[], tx: Executor): Promise<void> {
    const webhooks = this.#o.webhooks;
    await webhooks.insertAttempts(plans.map((plan) => plan.attempt), tx);
    // A success to a subscription with no run of failures to end changes nothing but the delivery.
    const plain = new Set(plans.filter((plan) => plan.decision.status === 'delivered' && (plan.delivery.webhook?.failing_since ?? null) === null));
    await webhooks.finishDelivered(
      [...plain].map((plan) => ({
        id: plan.delivery.id,
        attempts: plan.attempt.attempt,
        startedAt: plan.attempt.started_at,
        statusCode: plan.attempt.status_code ?? 0,
        latencyMs: plan.attempt.latency_ms,
        now: plan.now,
      })),
      this.#owner,
      tx,
    );
    for (const plan of plans) if (!plain.has(plan)) await this.#apply(plan, tx);
  }

  /** Records one attempt's delivery changes and what it means for its subscription. */
  async #apply(plan: RecordPlan, tx: Executor): Promise<void> {
    const webhooks = this.#o.webhooks;
    const d = plan.delivery;
    await webhooks.finishAttempt(d.id, plan.changes, this.#owner, tx);
    if (d.webhook_id === null) return;
    switch (plan.decision.webhook) {
      case 'succeeded':
        if ((d.webhook?.failing_since ?? null) !== null) await webhooks.clearFailing(d.webhook_id, tx);
        return;
      case 'failed':
        await webhooks.recordFailure(d.webhook_id, { startedAtMs: plan.attempt.started_at, nowMs: plan.now, disableAfterMs: this.#o.disableAfterMs }, tx);
        return;
      case 'gone':
        await webhooks.disableWebhook(d.webhook_id, 'gone', plan.now, tx);
        return;
      case 'unaffected':
        return;
    }
  }

  #decrypt(encrypted: string): string {
    let plain = this.#secrets.get(encrypted);
    if (plain === undefined) {
      plain = this.#o.box.decrypt(encrypted);
      this.#secrets.set(encrypted, plain);
    }
    return plain;
  }

  /** The account's secret for agent `webhook_url` deliveries, created on first use. */
  async #agentSecret(accountId: string): Promise<string> {
    const stored =
      (await this.#o.webhooks.getAgentSecret(accountId)) ??
      (await this.#o.webhooks.putAgentSecretIfMissing(accountId, this.#o.box.encrypt(generateWebhookSecret()), this.#o.clock.now())).secret_encrypted;
    return this.#decrypt(stored);
  }
}
