import { type Insertable, type Selectable, type Updateable, sql } from 'kysely';
import type {
  DeliveryLane,
  DeliveryStatus,
  DisabledReason,
  EventData,
  RecordedEventKind,
  SubscribedEvents,
  WebhookStatus,
} from '../domain/webhook.ts';
import { type JsonText, decodeJson, encodeJson } from './json-column.ts';
import type { NotificationChannel } from './pg-notifications.ts';
import type { Dialect, Executor } from './store.ts';
import type {
  AgentWebhookSecretTable,
  WebhookAttemptTable,
  WebhookDeliveryTable,
  WebhookEventTable,
  WebhookTable,
} from './tables/webhook.tables.ts';

/**
 * The notification channel on which committed events wake the delivery workers of every process
 * (PostgreSQL NOTIFY; the runtime subscribes the worker through its Notifications).
 */
const WORK_CHANNEL: NotificationChannel = 'switchboard_webhooks';

type WebhookRow = Selectable<WebhookTable>;

/** A subscription as stored, its `events` decoded. */
export interface Webhook extends Omit<WebhookRow, 'events'> {
  events: SubscribedEvents;
}
/** Columns of a subscription to change. */
export interface WebhookChanges extends Omit<Updateable<WebhookTable>, 'events'> {
  events?: SubscribedEvents;
}
/** The account's secret for deliveries to agents' `webhook_url`, encrypted. */
export type AgentWebhookSecret = Selectable<AgentWebhookSecretTable>;
/** A new event of the outbox; its `data` is stored as JSON text and sent as stored. */
export interface NewEvent extends Omit<Insertable<WebhookEventTable>, 'data'> {
  data: EventData;
}
/** One event to one destination: the queue's row. */
export type Delivery = Selectable<WebhookDeliveryTable>;
export type DeliveryChanges = Updateable<WebhookDeliveryTable>;
/** One attempt of a delivery, as logged. */
export type DeliveryAttempt = Selectable<WebhookAttemptTable>;

/** What a claimed delivery's subscription is now (its URL and secret are used at send time). */
export interface ClaimedWebhook {
  url: string;
  status: WebhookStatus;
  failing_since: number | null;
  secret_encrypted: string;
}

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery extends Delivery {
  /** The event's data, the JSON text spliced into the body byte for byte. */
  data: JsonText<EventData>;
  /** The subscription's current state; null for an agent `webhook_url`, or when the subscription was deleted. */
  webhook: ClaimedWebhook | null;
}

export interface ClaimQuery {
  /** Epoch milliseconds. */
  nowMs: number;
  lane: DeliveryLane;
  limit: number;
  /** How long the claimed deliveries stay this worker's, in milliseconds. */
  leaseMs: number;
  owner: string;
  /** Endpoints already at their concurrency cap in this worker. */
  excludeEndpoints: string[];
}

export interface DeliveryListQuery {
  accountId: string;
  webhookId?: string;
  kind?: RecordedEventKind;
  status?: DeliveryStatus;
  eventId?: string;
  limit: number;
  /** Continue after this delivery (newest first). */
  after?: { createdAt: number; id: string };
}

/** A successful attempt recorded by `finishDelivered`; times are epoch milliseconds. */
export interface DeliveredAttempt {
  id: string;
  attempts: number;
  startedAt: number;
  statusCode: number;
  latencyMs: number;
  now: number;
}

function decodeWebhook(row: WebhookRow): Webhook {
  return { ...row, events: decodeJson(row.events) };
}

/**
 * Webhooks, the agent-webhook secrets, events, deliveries (the queue) and attempts; and the
 * PostgreSQL notifications that wake the workers. Methods that take an `Executor` last run on it
 * (a caller's transaction), else on the store's own handle.
 */
export class WebhookRepository {
  readonly #db: Executor;
  readonly #dialect: Dialect;
  constructor(db: Executor, dialect: Dialect) {
    this.#db = db;
    this.#dialect = dialect;
  }

  // --- subscriptions -------------------------------------------------------------------------

  async insertWebhook(webhook: Webhook, db: Executor = this.#db): Promise<void> {
    await db.insertInto('webhooks').values({ ...webhook, events: encodeJson(webhook.events) }).execute();
  }

  async findWebhook(accountId: string, id: string, db: Executor = this.#db): Promise<Webhook | undefined> {
    const row = await db.selectFrom('webhooks').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && decodeWebhook(row);
  }

  async findWebhookByUrl(accountId: string, url: string, db: Executor = this.#db): Promise<Webhook | undefined> {
    const row = await db.selectFrom('webhooks').selectAll().where('url', '=', url).where('account_id', '=', accountId).executeTakeFirst();
    return row && decodeWebhook(row);
  }

  async updateWebhook(id: string, changes: WebhookChanges, db: Executor = this.#db): Promise<void> {
    const { events, ...rest } = changes;
    await db
      .updateTable('webhooks')
      .set(events === undefined ? rest : { ...rest, events: encodeJson(events) })
      .where('id', '=', id)
      .execute();
  }

  async deleteWebhook(accountId: string, id: string, db: Executor = this.#db): Promise<boolean> {
    const result = await db.deleteFrom('webhooks').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Oldest first. */
  async listWebhooks(accountId: string): Promise<Webhook[]> {
    const rows = await this.#db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    return rows.map(decodeWebhook);
  }

  async countWebhooks(accountId: string, db: Executor = this.#db): Promise<number> {
    const row = await db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /** The account's active subscriptions, for fan-out. */
  async activeWebhooks(accountId: string, db: Executor): Promise<Array<Pick<Webhook, 'id' | 'url' | 'events'>>> {
    const rows = await db
      .selectFrom('webhooks')
      .select(['id', 'url', 'events'])
      .where('account_id', '=', accountId)
      .where('status', '=', 'active')
      .execute();
    return rows.map((row) => ({ id: row.id, url: row.url, events: decodeJson(row.events) }));
  }

  /** Pending deliveries of a webhook become `cancelled` (it was deleted or disabled). */
  async cancelPending(webhookId: string, nowMs: number, reason: string, db: Executor = this.#db): Promise<void> {
    await db
      .updateTable('webhook_deliveries')
      .set({ status: 'cancelled', next_attempt_at: null, last_error: reason, updated_at: nowMs })
      .where('webhook_id', '=', webhookId)
      .where('status', '=', 'pending')
      .execute();
  }

  /** A delivery to the webhook succeeded: its run of failed attempts is over. */
  async clearFailing(webhookId: string, db: Executor = this.#db): Promise<void> {
    await db.updateTable('webhooks').set({ failing_since: null }).where('id', '=', webhookId).execute();
  }

  /**
   * An attempt to the webhook failed: its run of failures starts at `startedAtMs` unless one is
   * already running (possibly recorded by another worker). When the run has lasted
   * `disableAfterMs` or more by `nowMs`, the webhook is disabled as `failing` (see
   * `disableWebhook`); returns whether this call disabled it. Times are epoch milliseconds.
   */
  async recordFailure(
    webhookId: string,
    times: { startedAtMs: number; nowMs: number; disableAfterMs: number },
    db: Executor = this.#db,
  ): Promise<boolean> {
    await db
      .updateTable('webhooks')
      .set({ failing_since: times.startedAtMs })
      .where('id', '=', webhookId)
      .where('failing_since', 'is', null)
      .execute();
    const hook = await db.selectFrom('webhooks').select('failing_since').where('id', '=', webhookId).executeTakeFirst();
    if (hook?.failing_since == null || times.nowMs - hook.failing_since < times.disableAfterMs) return false;
    await this.disableWebhook(webhookId, 'failing', times.nowMs, db);
    return true;
  }

  /**
   * Disables an active webhook for `reason` and cancels its pending deliveries (their
   * `last_error` says why); a webhook already disabled keeps its first reason.
   */
  async disableWebhook(webhookId: string, reason: DisabledReason, nowMs: number, db: Executor = this.#db): Promise<void> {
    await db
      .updateTable('webhooks')
      .set({ status: 'disabled', disabled_reason: reason, disabled_at: nowMs, updated_at: nowMs })
      .where('id', '=', webhookId)
      .where('status', '=', 'active')
      .execute();
    await this.cancelPending(webhookId, nowMs, `the webhook was disabled (${reason})`, db);
  }

  async getAgentSecret(accountId: string, db: Executor = this.#db): Promise<string | undefined> {
    const row = await db.selectFrom('agent_webhook_secrets').select('secret_encrypted').where('account_id', '=', accountId).executeTakeFirst();
    return row?.secret_encrypted;
  }

  /** Stores the account's agent-webhook secret unless one exists (race-safe); returns the stored one. */
  async putAgentSecretIfMissing(accountId: string, encrypted: string, nowMs: number, db: Executor = this.#db): Promise<AgentWebhookSecret> {
    await db
      .insertInto('agent_webhook_secrets')
      .values({ account_id: accountId, secret_encrypted: encrypted, created_at: nowMs, updated_at: nowMs })
      .onConflict((oc) => oc.column('account_id').doNothing())
      .execute();
    return db.selectFrom('agent_webhook_secrets').selectAll().where('account_id', '=', accountId).executeTakeFirstOrThrow();
  }

  async replaceAgentSecret(accountId: string, encrypted: string, nowMs: number): Promise<void> {
    await this.#db
      .insertInto('agent_webhook_secrets')
      .values({ account_id: accountId, secret_encrypted: encrypted, created_at: nowMs, updated_at: nowMs })
      .onConflict((oc) => oc.column('account_id').doUpdateSet({ secret_encrypted: encrypted, updated_at: nowMs }))
      .execute();
  }

  /** Every stored encrypted secret, for re-encryption under a new server key. */
  async allEncryptedSecrets(): Promise<Array<{ table: 'webhooks' | 'agent_webhook_secrets'; key: string; value: string }>> {
    const hooks = await this.#db.selectFrom('webhooks').select(['id', 'secret_encrypted']).execute();
    const agents = await this.#db.selectFrom('agent_webhook_secrets').select(['account_id', 'secret_encrypted']).execute();
    return [
      ...hooks.map((r) => ({ table: 'webhooks' as const, key: r.id, value: r.secret_encrypted })),
      ...agents.map((r) => ({ table: 'agent_webhook_secrets' as const, key: r.account_id, value: r.secret_encrypted })),
    ];
  }

  async rewriteSecret(table: 'webhooks' | 'agent_webhook_secrets', key: string, from: string, to: string): Promise<void> {
    if (table === 'webhooks') {
      await this.#db.updateTable('webhooks').set({ secret_encrypted: to }).where('id', '=', key).where('secret_encrypted', '=', from).execute();
    } else {
      await this.#db
        .updateTable('agent_webhook_secrets')
        .set({ secret_encrypted: to })
        .where('account_id', '=', key)
        .where('secret_encrypted', '=', from)
        .execute();
    }
  }

  // --- the outbox ----------------------------------------------------------------------------

  async insertEvent(event: NewEvent, db: Executor): Promise<void> {
    await db.insertInto('webhook_events').values({ ...event, data: encodeJson(event.data) }).execute();
  }

  async insertDeliveries(deliveries: Delivery[], db: Executor): Promise<void> {
    if (deliveries.length > 0) await db.insertInto('webhook_deliveries').values(deliveries).execute();
  }

  /**
   * Wakes the delivery workers of every process once `db`'s transaction commits: a NOTIFY on
   * PostgreSQL, which delivers it only when (and if) the transaction commits. Nothing on SQLite
   * (one process; its worker is woken in-process).
   */
  async notifyWorkers(db: Executor): Promise<void> {
    if (this.#dialect === 'postgres') await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(db);
  }

  // --- the queue -----------------------------------------------------------------------------

  /**
   * Leases up to `limit` due deliveries of one lane, oldest due first. On PostgreSQL the rows are
   * picked with FOR UPDATE SKIP LOCKED, so concurrent workers never claim the same delivery; the
   * lease (`locked_until`) keeps it theirs until they record the attempt or the lease lapses.
   */
  async claim(query: ClaimQuery): Promise<ClaimedDelivery[]> {
    const { nowMs } = query;
    let due = this.#db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where('lane', '=', query.lane)
      .where('next_attempt_at', '<=', nowMs)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', nowMs)]));
    if (query.excludeEndpoints.length > 0) due = due.where('endpoint_key', 'not in', query.excludeEndpoints);
    due = due.orderBy('next_attempt_at').orderBy('id').limit(query.limit);
    if (this.#dialect === 'postgres') due = due.forUpdate().skipLocked();
    const claimed = await this.#db
      .updateTable('webhook_deliveries')
      .set({ locked_until: nowMs + query.leaseMs, locked_by: query.owner })
      .where('id', 'in', due)
      .returning('id')
      .execute();
    if (claimed.length === 0) return [];
    const rows = await this.#db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
      .leftJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .selectAll('d')
      .select(['e.data as data', 'w.url as webhook_url', 'w.status as webhook_status', 'w.secret_encrypted as webhook_secret', 'w.failing_since as webhook_failing_since'])
      .where(
        'd.id',
        'in',
        claimed.map((row) => row.id),
      )
      .execute();
    const deliveries = rows.map(({ webhook_url, webhook_status, webhook_secret, webhook_failing_since, ...delivery }): ClaimedDelivery => ({
      ...delivery,
      webhook:
        webhook_url === null || webhook_status === null || webhook_secret === null
          ? null
          : { url: webhook_url, status: webhook_status, failing_since: webhook_failing_since, secret_encrypted: webhook_secret },
    }));
    return deliveries.sort((a, b) => (a.next_attempt_at ?? 0) - (b.next_attempt_at ?? 0));
  }

  /** Gives deliveries back to the queue unchanged (e.g. their endpoint was at its cap). */
  async release(ids: string[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ locked_until: null, locked_by: null })
      .where('id', 'in', ids)
      .where('locked_by', '=', owner)
      .execute();
  }

  /** SQLite has one process: leases left by a previous (killed) run of it are void. */
  async releaseAllLeases(): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ locked_until: null, locked_by: null })
      .where('status', '=', 'pending')
      .where('locked_until', 'is not', null)
      .execute();
  }

  /** Appends attempts to the log (an attempt already logged under that number is kept). */
  async insertAttempts(attempts: DeliveryAttempt[], db: Executor): Promise<void> {
    if (attempts.length === 0) return;
    await db
      .insertInto('webhook_attempts')
      .values(attempts)
      .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
      .execute();
  }

  /**
   * Records a delivery's outcome if this worker still holds its lease (releasing it); returns
   * whether the delivery row was updated.
   */
  async finishAttempt(deliveryId: string, changes: DeliveryChanges, owner: string, db: Executor): Promise<boolean> {
    const result = await db
      .updateTable('webhook_deliveries')
      .set({ ...changes, locked_until: null, locked_by: null })
      .where('id', '=', deliveryId)
      .where('locked_by', '=', owner)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Records many successful deliveries in one statement (the common case, so a batch of
   * successes costs one round trip), each only if this worker still holds its lease.
   */
  async finishDelivered(rows: DeliveredAttempt[], owner: string, db: Executor): Promise<void> {
    if (rows.length === 0) return;
    const values = sql.join(
      rows.map(
        (r) =>
          sql`(CAST(${r.id} AS text), CAST(${r.attempts} AS integer), CAST(${r.startedAt} AS bigint), CAST(${r.statusCode} AS integer), CAST(${r.latencyMs} AS integer), CAST(${r.now} AS bigint))`,
      ),
    );
    await sql`
      WITH v(id, attempts, started_at, status_code, latency_ms, now_ms) AS (VALUES ${values})
      UPDATE webhook_deliveries SET
        status = 'delivered', manual = 0, next_attempt_at = NULL, last_error = NULL,
        attempts = v.attempts, last_attempt_at = v.started_at, last_status_code = v.status_code,
        last_latency_ms = v.latency_ms, delivered_at = v.now_ms, updated_at = v.now_ms,
        locked_until = NULL, locked_by = NULL
      FROM v
      WHERE webhook_deliveries.id = v.id AND webhook_deliveries.locked_by = ${owner}
    `.execute(db);
  }

  async findDelivery(accountId: string, id: string, db: Executor = this.#db): Promise<Delivery | undefined> {
    return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  async updateDelivery(id: string, changes: DeliveryChanges, db: Executor = this.#db): Promise<void> {
    await db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
  }

  /** Newest first. */
  async listDeliveries(query: DeliveryListQuery, db: Executor = this.#db): Promise<Delivery[]> {
    let q = db.selectFrom('webhook_deliveries').selectAll().where('account_id', '=', query.accountId);
    if (query.webhookId !== undefined) q = q.where('webhook_id', '=', query.webhookId);
    if (query.kind !== undefined) q = q.where('kind', '=', query.kind);
    if (query.status !== undefined) q = q.where('status', '=', query.status);
    if (query.eventId !== undefined) q = q.where('event_id', '=', query.eventId);
    const after = query.after;
    if (after) {
      q = q.where((eb) =>
        eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
      );
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
  }

  /** The data of these events, by event id (the delivery log shows what was sent). */
  async eventData(eventIds: string[]): Promise<Map<string, EventData>> {
    if (eventIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('webhook_events').select(['id', 'data']).where('id', 'in', [...new Set(eventIds)]).execute();
    return new Map(rows.map((row) => [row.id, decodeJson(row.data)]));
  }

  /** The attempts of these deliveries, by delivery then attempt number. */
  async attemptsOf(deliveryIds: string[]): Promise<DeliveryAttempt[]> {
    if (deliveryIds.length === 0) return [];
    return this.#db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_id', 'in', deliveryIds)
      .orderBy('delivery_id')
      .orderBy('attempt')
      .execute();
  }

  /** Counts by status, for metrics and tests. */
  async countDeliveries(): Promise<Array<{ status: DeliveryStatus; count: number }>> {
    const rows = await this.#db
      .selectFrom('webhook_deliveries')
      .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
      .groupBy('status')
      .execute();
    return rows.map((row) => ({ status: row.status, count: Number(row.count) }));
  }

  /**
   * Deletes finished deliveries (delivered, failed, cancelled) created before `cutoffMs`, their
   * attempts, and events left with no delivery, in batches; returns the deliveries deleted.
   */
  async pruneFinishedBefore(cutoffMs: number, batchSize = 1000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const ids = (
        await this.#db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('created_at', '<', cutoffMs)
          .where('status', 'in', ['delivered', 'failed', 'cancelled'])
          .limit(batchSize)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) break;
      await this.#db.transaction().execute(async (trx) => {
        await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
        await trx.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
      });
      deleted += ids.length;
      if (ids.length < batchSize) break;
    }
    for (;;) {
      const ids = (
        await this.#db
          .selectFrom('webhook_events')
          .select('id')
          .where('created_at', '<', cutoffMs)
          .where(({ not, exists, selectFrom }) =>
            not(exists(selectFrom('webhook_deliveries').select('webhook_deliveries.id').whereRef('webhook_deliveries.event_id', '=', 'webhook_events.id'))),
          )
          .limit(batchSize)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) break;
      await this.#db.deleteFrom('webhook_events').where('id', 'in', ids).execute();
      if (ids.length < batchSize) break;
    }
    return deleted;
  }
}
