import { randomBytes } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { Store } from '../storage/store.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import type { AttemptRow, ClaimedDelivery, DeliveryChanges, WebhookRepository } from '../storage/webhook.repository.ts';
import { WEBHOOK_NOTIFY_CHANNEL } from '../services/webhook-outbox.ts';
import type { WebhookHttpClient, SendResult } from './http-client.ts';
import { retryDelayMs } from './retry-schedule.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { deliveryBody, generateWebhookSecret, signedHeaders } from './signer.ts';

export interface DispatcherOptions {
  store: Store;
  webhooks: WebhookRepository;
  client: WebhookHttpClient;
  box: SecretBox;
  clock: Clock;
  log: Logger;
  retryScheduleMs: readonly number[];
  /** Whole-attempt timeout; the lease on a claimed delivery is this plus a margin. */
  timeoutMs: number;
  disableAfterMs: number;
  concurrency: number;
  endpointConcurrency: number;
  pollIntervalMs: number;
  /** PostgreSQL URL to LISTEN on for other processes' events (optional: polling covers them). */
  listenUrl?: string | null;
  random?: () => number;
}

interface RecordPlan {
  delivery: ClaimedDelivery;
  now: number;
  attempt: AttemptRow;
  changes: DeliveryChanges;
  ok: boolean;
  refused: boolean;
  disable: string | null;
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

/**
 * The delivery worker: claims due deliveries (leases), sends them, records each attempt and
 * schedules retries. Woken at once by events recorded in this process (and, on PostgreSQL, by
 * NOTIFY from any process), and polls for due retries and anything else. Two lanes: first attempts
 * (and manual redeliveries) are claimed before retries, and retries are held to half the slots.
 * At most `endpointConcurrency` deliveries per endpoint and `concurrency` in all are in flight.
 */
export class WebhookDispatcher {
  readonly #o: DispatcherOptions;
  readonly #refillAt: number;
  readonly owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #perEndpoint = new Map<string, number>();
  readonly #secrets = new Map<string, string>();
  #retriesInFlight = 0;
  #sentCount = 0;
  #pumping: Promise<void> | null = null;
  #again = false;
  /** The last fill stopped for lack of slots: completions should look for more. */
  #backlog = false;
  #running = false;
  #draining = 0;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;
  #listener: pg.Client | null = null;
  readonly #log: Logger;
  #toRecord: Array<{ plan: RecordPlan; resolve: () => void; reject: (error: unknown) => void }> = [];
  #flushing = false;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#log = options.log;
    this.#refillAt = Math.max(1, Math.floor(options.concurrency / 8));
  }

  /** Starts the background loop; idempotent. */
  async start(): Promise<void> {
    if (this.#running || this.#closed) return;
    this.#running = true;
    // SQLite is single-process: leases left by a killed previous run are void now.
    if (this.#o.store.dialect === 'sqlite') await this.#o.webhooks.releaseAllLeases();
    this.#timer = setInterval(() => this.wake(), this.#o.pollIntervalMs);
    this.#timer.unref();
    if (this.#o.listenUrl) await this.#listen(this.#o.listenUrl);
    this.wake();
  }

  /** Looks for due deliveries now (after an event was recorded, or a redelivery queued). */
  wake(): void {
    if (this.#closed || (!this.#running && this.#draining === 0)) return;
    void this.#pump();
  }

  /**
   * Claims and sends everything due now, waiting for those sends; returns how many attempts it made.
   * For tests and tools that drive time with a manual clock.
   */
  async runOnce(): Promise<number> {
    this.#draining += 1;
    try {
      const before = this.#sentCount;
      await this.#pump();
      while (this.#inFlight.size > 0) {
        await Promise.race(this.#inFlight);
        await this.#pump();
      }
      return this.#sentCount - before;
    } finally {
      this.#draining -= 1;
    }
  }

  /** runOnce until nothing is due; returns the attempts made. */
  async drain(maxRounds = 100): Promise<number> {
    let total = 0;
    for (let round = 0; round < maxRounds; round += 1) {
      const sent = await this.runOnce();
      total += sent;
      if (sent === 0) break;
    }
    return total;
  }

  /** Deliveries this worker has handled (sent, or cancelled because their webhook went away). */
  get handled(): number {
    return this.#sentCount;
  }

  /** Stops claiming, waits for sends in flight; idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const listener = this.#listener;
    this.#listener = null;
    await listener?.end().catch(() => {});
    await this.#pumping;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #listen(url: string): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    client.on('error', (error) => this.#log.warn({ err: error }, 'webhook listener lost its connection; polling continues'));
    client.on('notification', () => this.wake());
    try {
      await client.connect();
      await client.query(`LISTEN ${WEBHOOK_NOTIFY_CHANNEL}`);
      this.#listener = client;
    } catch (error) {
      this.#log.warn({ err: error }, 'webhook listener could not start; polling only');
      await client.end().catch(() => {});
    }
  }

  #pump(): Promise<void> {
    if (this.#pumping) {
      this.#again = true;
      return this.#pumping;
    }
    this.#pumping = (async () => {
      do {
        this.#again = false;
        try {
          await this.#fill();
        } catch (error) {
          this.#log.error({ err: error }, 'webhook claim failed');
          return;
        }
      } while (this.#again && !this.#closed);
    })().finally(() => {
      this.#pumping = null;
    });
    return this.#pumping;
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
      const claimArgs = { nowMs: now, leaseMs: leaseMs(this.#o.timeoutMs), owner: this.owner, excludeEndpoints };
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
      await this.#o.webhooks.release(giveBack, this.owner);
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
    const task: Promise<void> = this.#deliver(delivery)
      .catch((error: unknown) => this.#log.error({ err: error, delivery_id: delivery.id }, 'webhook delivery failed unexpectedly'))
      .finally(() => {
        const left = (this.#perEndpoint.get(key) ?? 1) - 1;
        if (left <= 0) this.#perEndpoint.delete(key);
        else this.#perEndpoint.set(key, left);
        if (isRetry) this.#retriesInFlight -= 1;
        this.#inFlight.delete(task);
        this.#sentCount += 1;
        // Refill in batches: a claim per completed delivery would cost more than the delivery.
        const free = this.#o.concurrency - this.#inFlight.size;
        if (this.#backlog && (free >= this.#refillAt || this.#inFlight.size === 0)) this.wake();
      });
    this.#inFlight.add(task);
  }

  async #deliver(d: ClaimedDelivery): Promise<void> {
    const o = this.#o;
    const startedAt = o.clock.now();
    if (d.webhook_id !== null && d.webhook_status !== 'active') {
      const reason = d.webhook_status === null ? 'the webhook was deleted' : 'the webhook is disabled';
      await o.webhooks.updateDelivery(d.id, {
        status: 'cancelled', next_attempt_at: null, last_error: reason, locked_until: null, locked_by: null, updated_at: startedAt,
      });
      return;
    }
    const url = d.webhook_url ?? d.url;
    const secret = d.webhook_id !== null ? this.#decrypt(d.webhook_secret as string) : await this.#agentSecret(d.account_id);
    const body = deliveryBody(d.kind, d.data, startedAt);
    // webhook-id is the event id: the same on every attempt, so receivers can drop duplicates.
    const headers = signedHeaders(secret, d.kind, d.event_id, startedAt, body);
    const result = await o.client.send(url, headers as unknown as Record<string, string>, body);
    await this.#record(d, startedAt, result);
  }

  /** Decides the outcome of an attempt and queues it to be recorded with others (group commit). */
  #record(d: ClaimedDelivery, startedAt: number, result: SendResult): Promise<void> {
    const o = this.#o;
    const now = o.clock.now();
    const attempt = d.attempts + 1;
    const ok = result.failure === null;
    let outcome: string;
    let nextAt: number | null = null;
    let disable: string | null = null;
    if (ok) outcome = 'delivered';
    else if (result.failure === 'refused') outcome = 'refused';
    else if (result.statusCode === 410) {
      outcome = 'gone';
      disable = 'gone';
    } else if (d.manual === 1) outcome = 'failed';
    else {
      const delay = retryDelayMs(attempt, o.retryScheduleMs, {
        retryAfterMs: result.statusCode === 429 ? result.retryAfterMs : null,
        random: o.random,
      });
      if (delay === null) outcome = 'exhausted';
      else {
        outcome = 'retrying';
        nextAt = now + delay;
      }
    }
    const changes: DeliveryChanges = {
      status: ok ? 'delivered' : nextAt !== null ? 'pending' : 'failed',
      lane: nextAt !== null ? 1 : d.lane,
      manual: 0,
      attempts: attempt,
      next_attempt_at: nextAt,
      last_attempt_at: startedAt,
      last_status_code: result.statusCode,
      last_error: result.error,
      last_latency_ms: result.latencyMs,
      updated_at: now,
    };
    if (ok) changes.delivered_at = now;
    const plan: RecordPlan = {
      delivery: d,
      now,
      attempt: {
        delivery_id: d.id,
        attempt,
        account_id: d.account_id,
        started_at: startedAt,
        status_code: result.statusCode,
        latency_ms: result.latencyMs,
        outcome,
        error: result.error,
        response_excerpt: result.excerpt,
        next_attempt_at: nextAt,
      },
      changes,
      ok,
      refused: result.failure === 'refused',
      disable,
    };
    return new Promise((resolve, reject) => {
      this.#toRecord.push({ plan, resolve, reject });
      if (this.#toRecord.length === 1) setImmediate(() => void this.#flush());
    });
  }

  /** Records every queued attempt in one transaction: one commit for many deliveries. */
  async #flush(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    try {
      while (this.#toRecord.length > 0) {
        const batch = this.#toRecord.splice(0, 500);
        try {
          await this.#o.store.db.transaction().execute(async (trx) => {
            await this.#o.webhooks.insertAttempts(batch.map((item) => item.plan.attempt), trx);
            // Plain successes in one statement; anything else one by one.
            const plain = new Set(batch.filter(({ plan }) => plan.ok && plan.delivery.webhook_failing_since === null).map(({ plan }) => plan));
            await this.#o.webhooks.finishDelivered(
              [...plain].map((plan) => ({
                id: plan.delivery.id,
                attempts: plan.attempt.attempt,
                startedAt: plan.attempt.started_at,
                statusCode: plan.attempt.status_code ?? 0,
                latencyMs: plan.attempt.latency_ms,
                now: plan.now,
              })),
              this.owner,
              trx,
            );
            for (const { plan } of batch) if (!plain.has(plan)) await this.#apply(plan, trx);
          });
          for (const item of batch) item.resolve();
        } catch (error) {
          for (const item of batch) item.reject(error);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #apply(plan: RecordPlan, trx: Kysely<Database>): Promise<void> {
    const o = this.#o;
    const d = plan.delivery;
    const { now } = plan;
    await o.webhooks.finishAttempt(d.id, plan.changes, this.owner, trx);
    if (d.webhook_id === null) return;
    if (plan.ok) {
      if (d.webhook_failing_since !== null) {
        await trx.updateTable('webhooks').set({ failing_since: null }).where('id', '=', d.webhook_id).execute();
      }
      return;
    }
    if (plan.refused) return; // the destination, not the receiver, is at fault
    let disable = plan.disable;
    if (disable === null) {
      await trx
        .updateTable('webhooks')
        .set({ failing_since: plan.attempt.started_at })
        .where('id', '=', d.webhook_id)
        .where('failing_since', 'is', null)
        .execute();
      const hook = await trx.selectFrom('webhooks').select('failing_since').where('id', '=', d.webhook_id).executeTakeFirst();
      if (hook?.failing_since != null && now - hook.failing_since >= o.disableAfterMs) disable = 'failing';
    }
    if (disable !== null) {
      await trx
        .updateTable('webhooks')
        .set({ status: 'disabled', disabled_reason: disable, disabled_at: now, updated_at: now })
        .where('id', '=', d.webhook_id)
        .where('status', '=', 'active')
        .execute();
      await o.webhooks.cancelPending(d.webhook_id, now, `the webhook was disabled (${disable})`, trx);
    }
  }

  #decrypt(encrypted: string): string {
    let plain = this.#secrets.get(encrypted);
    if (plain === undefined) {
      plain = this.#o.box.decrypt(encrypted);
      if (this.#secrets.size > 10_000) this.#secrets.clear();
      this.#secrets.set(encrypted, plain);
    }
    return plain;
  }

  /** The account's secret for agent `webhook_url` deliveries, created on first use. */
  async #agentSecret(accountId: string): Promise<string> {
    let stored = await this.#o.webhooks.getAgentSecret(accountId);
    stored ??= await this.#o.webhooks.putAgentSecretIfMissing(accountId, this.#o.box.encrypt(generateWebhookSecret()), this.#o.clock.now());
    return this.#decrypt(stored);
  }
}
