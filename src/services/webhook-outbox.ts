import { sql, type Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { Database } from '../storage/schema.ts';
import type { Dialect } from '../storage/store.ts';
import type { DeliveryRow, WebhookRepository } from '../storage/webhook.repository.ts';
import type { AccountEvent, EventOutbox } from './events.ts';

/** PostgreSQL channel on which committed events wake the delivery workers of every process. */
export const WEBHOOK_NOTIFY_CHANNEL = 'switchboard_webhooks';

/** Whether a subscription's `events` (a list of kinds, or ["*"]) covers `kind`. */
export function subscribes(events: readonly string[], kind: string): boolean {
  return events.includes('*') || events.includes(kind);
}

/** The endpoint a delivery counts against for the per-endpoint concurrency cap. */
export function endpointKey(webhookId: string | null, url: string): string {
  return webhookId ?? `url:${url}`;
}

export interface WebhookOutboxDeps {
  webhooks: WebhookRepository;
  clock: Clock;
  dialect: Dialect;
  /** Called when deliveries were recorded: wakes this process's worker (after the commit, see below). */
  onRecorded?: () => void;
}

/**
 * The transactional outbox: the event row and one delivery row per matching active subscription
 * (plus one for an agent's `webhook_url`) are written with the caller's transaction handle, so
 * they commit or roll back with the change that caused them. The queue is those delivery rows.
 */
export class WebhookOutbox implements EventOutbox {
  readonly #d: WebhookOutboxDeps;

  constructor(deps: WebhookOutboxDeps) {
    this.#d = deps;
  }

  async record(db: Kysely<Database>, event: AccountEvent): Promise<void> {
    const now = this.#d.clock.now();
    const eventId = newId('event');
    await this.#d.webhooks.insertEvent(
      { id: eventId, account_id: event.accountId, kind: event.kind, data: JSON.stringify(event.data), created_at: now },
      db,
    );
    const targets: Array<{ webhookId: string | null; url: string }> = [];
    for (const hook of await this.#d.webhooks.activeWebhooks(event.accountId, db)) {
      if (subscribes(JSON.parse(hook.events) as string[], event.kind)) targets.push({ webhookId: hook.id, url: hook.url });
    }
    if (event.agentWebhookUrl) targets.push({ webhookId: null, url: event.agentWebhookUrl });
    if (targets.length === 0) return;
    const rows: DeliveryRow[] = targets.map((target) => ({
      id: newId('delivery'),
      event_id: eventId,
      account_id: event.accountId,
      webhook_id: target.webhookId,
      url: target.url,
      endpoint_key: endpointKey(target.webhookId, target.url),
      kind: event.kind,
      status: 'pending',
      lane: 0,
      manual: 0,
      attempts: 0,
      next_attempt_at: now,
      locked_until: null,
      locked_by: null,
      last_attempt_at: null,
      last_status_code: null,
      last_error: null,
      last_latency_ms: null,
      delivered_at: null,
      created_at: now,
      updated_at: now,
    }));
    await this.#d.webhooks.insertDeliveries(rows, db);
    // PostgreSQL delivers a NOTIFY only when (and if) the transaction commits: every worker
    // listening wakes after the commit. In-process, onRecorded wakes this worker too; on SQLite
    // its claim queues behind the transaction on the single connection, so it runs after the commit.
    if (this.#d.dialect === 'postgres') await sql`select pg_notify(${WEBHOOK_NOTIFY_CHANNEL}, '')`.execute(db);
    this.#d.onRecorded?.();
  }
}
