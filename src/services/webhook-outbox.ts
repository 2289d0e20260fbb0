import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import { TEST_EVENT_KIND, isAgentEventKind, subscribes } from '../domain/webhook.ts';
import type { Executor } from '../storage/store.ts';
import type { Delivery, WebhookRepository } from '../storage/webhook.repository.ts';
import type { AccountEvent, EventOutbox } from './events.ts';

/** The endpoint a delivery counts against for the per-endpoint concurrency cap. */
export function endpointKey(webhookId: string | null, url: string): string {
  return webhookId ?? `url:${url}`;
}

export interface WebhookOutboxDeps {
  webhooks: WebhookRepository;
  clock: Clock;
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

  async record(db: Executor, event: AccountEvent): Promise<void> {
    const now = this.#d.clock.now();
    const eventId = newId('event');
    await this.#d.webhooks.insertEvent(
      { id: eventId, account_id: event.accountId, kind: event.kind, data: event.data, created_at: now },
      db,
    );
    const targets: Array<{ webhookId: string | null; url: string; timeoutMs?: number | null }> = [];
    const kind = event.kind;
    if (event.onlyWebhook) {
      targets.push({ webhookId: event.onlyWebhook.id, url: event.onlyWebhook.url });
    } else if (!isAgentEventKind(kind) && kind !== TEST_EVENT_KIND) {
      for (const hook of await this.#d.webhooks.activeWebhooks(event.accountId, db)) {
        if (subscribes(hook.events, kind)) targets.push({ webhookId: hook.id, url: hook.url });
      }
    }
    if (event.agentWebhookUrl) targets.push({ webhookId: null, url: event.agentWebhookUrl, timeoutMs: event.agentWebhookTimeoutMs ?? null });
    if (targets.length === 0) return;
    const deliveries: Delivery[] = targets.map((target) => ({
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
      timeout_ms: target.timeoutMs ?? null,
    }));
    await this.#d.webhooks.insertDeliveries(deliveries, db);
    // PostgreSQL delivers a NOTIFY only when (and if) the transaction commits: every worker
    // listening wakes after the commit. In-process, onRecorded wakes this worker too; on SQLite
    // its claim queues behind the transaction on the single connection, so it runs after the commit.
    await this.#d.webhooks.notifyWorkers(db);
    this.#d.onRecorded?.();
  }
}
