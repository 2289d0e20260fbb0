import { type Insertable, type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import type { Database } from './schema.ts';
import type { Dialect } from './store.ts';
import type {
  WebhookAttemptTable,
  WebhookDeliveryTable,
  WebhookEventTable,
  WebhookTable,
} from './tables/webhook.tables.ts';

export type WebhookRow = Selectable<WebhookTable>;
export type WebhookChanges = Updateable<WebhookTable>;
export type DeliveryRow = Selectable<WebhookDeliveryTable>;
export type DeliveryChanges = Updateable<WebhookDeliveryTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery extends DeliveryRow {
  data: string;
  /** The subscription's current state; null for an agent `webhook_url` (or a deleted subscription). */
  webhook_url: string | null;
  webhook_status: string | null;
  webhook_failing_since: number | null;
  webhook_secret: string | null;
}

export interface ClaimQuery {
  nowMs: number;
  lane: 0 | 1;
  limit: number;
  leaseMs: number;
  owner: string;
  /** Endpoints already at their concurrency cap in this worker. */
  excludeEndpoints: string[];
}

export interface DeliveryListQuery {
  accountId: string;
  webhookId?: string;
  kind?: string;
  status?: string;
  eventId?: string;
  limit: number;
  /** Continue after this delivery (newest first). */
  after?: { createdAt: number; id: string };
}

/** Webhooks, the agent-webhook secrets, events, deliveries (the queue) and attempts. */
export class WebhookRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: Dialect;
  constructor(db: Kysely<Database>, dialect: Dialect) {
    this.#db = db;
    this.#dialect = dialect;
  }

  // --- subscriptions -------------------------------------------------------------------------

  async insertWebhook(row: WebhookRow, db: Kysely<Database> = this.#db): Promise<void> {
    await db.insertInto('webhooks').values(row).execute();
  }

  async findWebhook(accountId: string, id: string, db: Kysely<Database> = this.#db): Promise<WebhookRow | undefined> {
    return db.selectFrom('webhooks').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  async findWebhookByUrl(accountId: string, url: string, db: Kysely<Database> = this.#db): Promise<WebhookRow | undefined> {
    return db.selectFrom('webhooks').selectAll().where('url', '=', url).where('account_id', '=', accountId).executeTakeFirst();
  }

  async updateWebhook(id: string, changes: WebhookChanges, db: Kysely<Database> = this.#db): Promise<void> {
    await db.updateTable('webhooks').set(changes).where('id', '=', id).execute();
  }

  async deleteWebhook(accountId: string, id: string, db: Kysely<Database> = this.#db): Promise<boolean> {
    const result = await db.deleteFrom('webhooks').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async listWebhooks(accountId: string): Promise<WebhookRow[]> {
    return this.#db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
  }

  async countWebhooks(accountId: string, db: Kysely<Database> = this.#db): Promise<number> {
    const row = await db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /** The account's active subscriptions, for fan-out. */
  async activeWebhooks(accountId: string, db: Kysely<Database>): Promise<Array<Pick<WebhookRow, 'id' | 'url' | 'events'>>> {
    return db
      .selectFrom('webhooks')
      .select(['id', 'url', 'events'])
      .where('account_id', '=', accountId)
      .where('status', '=', 'active')
      .execute();
  }

  /** Pending deliveries of a webhook become `cancelled` (it was deleted or disabled). */
  async cancelPending(webhookId: string, nowMs: number, reason: string, db: Kysely<Database> = this.#db): Promise<void> {
    await db
      .updateTable('webhook_deliveries')
      .set({ status: 'cancelled', next_attempt_at: null, last_error: reason, updated_at: nowMs })
      .where('webhook_id', '=', webhookId)
      .where('status', '=', 'pending')
      .execute();
  }

  async getAgentSecret(accountId: string, db: Kysely<Database> = this.#db): Promise<string | undefined> {
    const row = await db.selectFrom('agent_webhook_secrets').select('secret_encrypted').where('account_id', '=', accountId).executeTakeFirst();
    return row?.secret_encrypted;
  }

  /** Stores the account's agent-webhook secret unless one exists (race-safe); returns the stored one. */
  async putAgentSecretIfMissing(accountId: string, encrypted: string, nowMs: number, db: Kysely<Database> = this.#db): Promise<string> {
    await db
      .insertInto('agent_webhook_secrets')
      .values({ account_id: accountId, secret_encrypted: encrypted, created_at: nowMs, updated_at: nowMs })
      .onConflict((oc) => oc.column('account_id').doNothing())
      .execute();
    return (await this.getAgentSecret(accountId, db)) as string;
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

  async insertEvent(row: Insertable<WebhookEventTable>, db: Kysely<Database>): Promise<void> {
    await db.insertInto('webhook_events').values(row).execute();
  }

  async insertDeliveries(rows: DeliveryRow[], db: Kysely<Database>): Promise<void> {
    if (rows.length > 0) await db.insertInto('webhook_deliveries').values(rows).execute();
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
    return rows.sort((a, b) => (a.next_attempt_at ?? 0) - (b.next_attempt_at ?? 0));
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
  async insertAttempts(attempts: AttemptRow[], db: Kysely<Database>): Promise<void> {
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
  async finishAttempt(deliveryId: string, changes: DeliveryChanges, owner: string, db: Kysely<Database>): Promise<boolean> {
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
  async finishDelivered(
    rows: Array<{ id: string; attempts: number; startedAt: number; statusCode: number; latencyMs: number; now: number }>,
    owner: string,
    db: Kysely<Database>,
  ): Promise<void> {
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

  async findDelivery(accountId: string, id: string, db: Kysely<Database> = this.#db): Promise<DeliveryRow | undefined> {
    return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  }

  async updateDelivery(id: string, changes: DeliveryChanges, db: Kysely<Database> = this.#db): Promise<void> {
    await db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
  }

  async listDeliveries(query: DeliveryListQuery): Promise<DeliveryRow[]> {
    let q = this.#db.selectFrom('webhook_deliveries').selectAll().where('account_id', '=', query.accountId);
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

  async attemptsOf(deliveryIds: string[]): Promise<AttemptRow[]> {
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
  async countDeliveries(): Promise<Array<{ status: string; count: number }>> {
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
