import type { Clock } from '../lib/clock.ts';
import { isId, newId } from '../lib/ids.ts';
import { AppError, errors } from '../domain/errors.ts';
import type { Store } from '../storage/store.ts';
import type { Delivery, DeliveryAttempt, Webhook, WebhookRepository } from '../storage/webhook.repository.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import type { EventOutbox } from './events.ts';
import { type DestinationCheck, checkWebhookUrl } from './webhook-url.ts';
import { generateWebhookSecret } from '../domain/webhook-secret.ts';
import {
  AGENT_EVENT_KINDS,
  EVENT_KINDS,
  TEST_EVENT_KIND,
  type DeliveryStatus,
  type DisabledReason,
  type EventData,
  type EventKind,
  type RecordedEventKind,
  type SubscribedEvents,
  type WebhookStatus,
  isAgentEventKind,
  isEventKind,
} from '../domain/webhook.ts';

/** Webhooks one account may have. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 50;

/** A subscription as the API answers it: never its secret (see `setWebhook`). */
export interface WebhookView {
  id: string;
  url: string;
  events: SubscribedEvents;
  status: WebhookStatus;
  disabled_reason: DisabledReason | null;
  disabled_at: number | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

/** One attempt in the delivery log: the stored attempt without its keys. */
export type AttemptView = Omit<DeliveryAttempt, 'delivery_id' | 'account_id'>;

/** One delivery in the log: the stored delivery's public columns, its kind as `event`, its attempts. */
export type DeliveryView = Pick<
  Delivery,
  | 'id'
  | 'event_id'
  | 'webhook_id'
  | 'url'
  | 'next_attempt_at'
  | 'last_attempt_at'
  | 'last_status_code'
  | 'last_error'
  | 'last_latency_ms'
  | 'delivered_at'
  | 'created_at'
> & {
  event: RecordedEventKind;
  status: DeliveryStatus;
  attempt_count: number;
  attempts: AttemptView[];
  /** The event's data: what each attempt's body carries (beside `event` and `sent_at`). */
  data: EventData | null;
};

export interface SetWebhookInput {
  url: string;
  events: string[];
  id?: string;
}

export interface DeliveryFilter {
  webhook_id?: string;
  /** An event kind; anything else is refused. */
  event?: string;
  status?: DeliveryStatus;
  event_id?: string;
  limit?: number;
  pagination_key?: string;
}

export interface WebhookServiceDeps {
  store: Store;
  webhooks: WebhookRepository;
  box: SecretBox;
  clock: Clock;
  /** Judges a URL's host when it is set (the delivery policy; names are judged again at connect time). */
  destinations: DestinationCheck;
  /** Wakes the delivery worker (a redelivery was queued). */
  wake?: () => void;
  /** Records test events (the outbox wakes the worker itself). */
  outbox: EventOutbox;
}

/** Webhook subscriptions, the delivery log, redelivery and the agent-webhook secret. */
export class WebhookService {
  readonly #d: WebhookServiceDeps;

  constructor(deps: WebhookServiceDeps) {
    this.#d = deps;
  }

  /**
   * Creates or updates a webhook. With `id`, updates that webhook; without, updates the account's
   * webhook with the same URL, else creates one. An update re-enables a disabled webhook.
   * The secret is returned on creation only.
   */
  async setWebhook(accountId: string, input: SetWebhookInput): Promise<{ created: boolean; webhook: WebhookView & { secret?: string } }> {
    const url = checkWebhookUrl(input.url, this.#d.destinations);
    const events = checkEvents(input.events);
    if (input.id !== undefined && !isId('webhook', input.id)) throw errors.webhookNotFound(input.id);
    const now = this.#d.clock.now();
    try {
      return await this.#d.store.transaction(async (tx) => {
        const existing = input.id !== undefined
          ? await this.#d.webhooks.findWebhook(accountId, input.id, tx)
          : await this.#d.webhooks.findWebhookByUrl(accountId, url, tx);
        if (input.id !== undefined && !existing) throw errors.webhookNotFound(input.id);
        if (existing) {
          if (existing.url !== url && (await this.#d.webhooks.findWebhookByUrl(accountId, url, tx))) {
            throw errors.webhookUrlTaken();
          }
          const changes: Pick<Webhook, 'url' | 'events' | 'status' | 'disabled_reason' | 'disabled_at' | 'failing_since' | 'updated_at'> = {
            url,
            events,
            status: 'active',
            disabled_reason: null,
            disabled_at: null,
            failing_since: existing.status === 'active' ? existing.failing_since : null,
            updated_at: Math.max(now, existing.updated_at),
          };
          await this.#d.webhooks.updateWebhook(existing.id, changes, tx);
          return { created: false, webhook: toWebhookView({ ...existing, ...changes }) };
        }
        if ((await this.#d.webhooks.countWebhooks(accountId, tx)) >= MAX_WEBHOOKS_PER_ACCOUNT) {
          throw errors.webhookLimitReached(MAX_WEBHOOKS_PER_ACCOUNT);
        }
        const secret = generateWebhookSecret();
        const webhook: Webhook = {
          id: newId('webhook'),
          account_id: accountId,
          url,
          events,
          secret_encrypted: this.#d.box.encrypt(secret),
          status: 'active',
          disabled_reason: null,
          disabled_at: null,
          failing_since: null,
          created_at: now,
          updated_at: now,
        };
        await this.#d.webhooks.insertWebhook(webhook, tx);
        return { created: true, webhook: { ...toWebhookView(webhook), secret } };
      });
    } catch (error) {
      // A concurrent set.php created the same URL first: this request becomes its update.
      if (input.id === undefined && !(error instanceof AppError) && (await this.#d.webhooks.findWebhookByUrl(accountId, url))) {
        return this.setWebhook(accountId, input);
      }
      throw error;
    }
  }

  async listWebhooks(accountId: string): Promise<WebhookView[]> {
    return (await this.#d.webhooks.listWebhooks(accountId)).map(toWebhookView);
  }

  /** Deletes a webhook (by id or URL); its pending deliveries are cancelled with it. */
  async deleteWebhook(accountId: string, target: { id?: string; url?: string }): Promise<{ deleted: true; id: string }> {
    return this.#d.store.transaction(async (tx) => {
      const webhook = target.id !== undefined
        ? isId('webhook', target.id) ? await this.#d.webhooks.findWebhook(accountId, target.id, tx) : undefined
        : await this.#d.webhooks.findWebhookByUrl(accountId, target.url ?? '', tx);
      if (!webhook) throw errors.webhookNotFound(target.id ?? target.url ?? '');
      await this.#d.webhooks.cancelPending(webhook.id, this.#d.clock.now(), 'the webhook was deleted', tx);
      await this.#d.webhooks.deleteWebhook(accountId, webhook.id, tx);
      return { deleted: true as const, id: webhook.id };
    });
  }

  /** The delivery log, newest first, each delivery with its attempts. */
  async listDeliveries(accountId: string, filter: DeliveryFilter): Promise<{ deliveries: DeliveryView[]; next_pagination_key: string | null }> {
    let kind: RecordedEventKind | undefined;
    if (filter.event !== undefined) {
      if (!isEventKind(filter.event) && !isAgentEventKind(filter.event) && filter.event !== TEST_EVENT_KIND) {
        throw errors.invalidRequest(`event "${filter.event}" is not an event kind (${[...EVENT_KINDS, ...AGENT_EVENT_KINDS, TEST_EVENT_KIND].join(', ')})`);
      }
      kind = filter.event;
    }
    let after: { createdAt: number; id: string } | undefined;
    if (filter.pagination_key !== undefined) {
      const anchor = isId('delivery', filter.pagination_key) ? await this.#d.webhooks.findDelivery(accountId, filter.pagination_key) : undefined;
      if (!anchor) throw errors.invalidRequest('pagination_key is not a delivery of this account');
      after = { createdAt: anchor.created_at, id: anchor.id };
    }
    const limit = filter.limit ?? 50;
    const rows = await this.#d.webhooks.listDeliveries({
      accountId,
      webhookId: filter.webhook_id,
      kind,
      status: filter.status,
      eventId: filter.event_id,
      limit,
      after,
    });
    const attempts = await this.#d.webhooks.attemptsOf(rows.map((row) => row.id));
    const byDelivery = new Map<string, DeliveryAttempt[]>();
    for (const attempt of attempts) {
      const list = byDelivery.get(attempt.delivery_id) ?? [];
      list.push(attempt);
      byDelivery.set(attempt.delivery_id, list);
    }
    const data = await this.#d.webhooks.eventData(rows.map((row) => row.event_id));
    const deliveries = rows.map((row) => toDeliveryView(row, byDelivery.get(row.id) ?? [], data.get(row.event_id) ?? null));
    const last = rows.at(-1);
    return { deliveries, next_pagination_key: rows.length === limit && last ? last.id : null };
  }

  /**
   * Queues a delivery to be sent again now, with the same webhook-id. A finished delivery gets one
   * more attempt (not retried if it fails); a pending one is moved to now.
   */
  async redeliver(accountId: string, deliveryId: string): Promise<DeliveryView> {
    const now = this.#d.clock.now();
    const row = await this.#d.store.transaction(async (tx) => {
      const delivery = isId('delivery', deliveryId) ? await this.#d.webhooks.findDelivery(accountId, deliveryId, tx) : undefined;
      if (!delivery) throw errors.deliveryNotFound(deliveryId);
      if (delivery.webhook_id !== null) {
        const hook = await this.#d.webhooks.findWebhook(accountId, delivery.webhook_id, tx);
        if (!hook) throw errors.webhookGone('deleted');
        if (hook.status !== 'active') throw errors.webhookGone('disabled');
      }
      if (delivery.locked_until !== null && delivery.locked_until > now) throw errors.deliveryInFlight();
      const changes: Pick<Delivery, 'status' | 'lane' | 'manual' | 'next_attempt_at' | 'updated_at'> = {
        status: 'pending',
        lane: 0,
        manual: delivery.status === 'pending' ? delivery.manual : 1,
        next_attempt_at: now,
        updated_at: now,
      };
      await this.#d.webhooks.updateDelivery(delivery.id, changes, tx);
      return { ...delivery, ...changes };
    });
    this.#d.wake?.();
    return this.#view(row);
  }

  /**
   * Sends a test event (`webhook.test`) to one subscription now, whatever kinds it listens to,
   * signed and retried like any delivery, and logged; answers the delivery. A disabled
   * subscription is refused (409), as a redelivery to it is.
   */
  async sendTestEvent(accountId: string, webhookId: string): Promise<DeliveryView> {
    const row = await this.#d.store.transaction(async (tx) => {
      const hook = isId('webhook', webhookId) ? await this.#d.webhooks.findWebhook(accountId, webhookId, tx) : undefined;
      if (!hook) throw errors.webhookNotFound(webhookId);
      if (hook.status !== 'active') throw errors.webhookGone('disabled');
      const data = { webhook_id: hook.id, message: 'A test event: this endpoint receives and verifies deliveries.' };
      await this.#d.outbox.record(tx, { accountId, kind: TEST_EVENT_KIND, data, onlyWebhook: { id: hook.id, url: hook.url } });
      const [delivery] = await this.#d.webhooks.listDeliveries({ accountId, webhookId: hook.id, kind: TEST_EVENT_KIND, limit: 1 }, tx);
      return delivery!;
    });
    return this.#view(row);
  }

  async #view(row: Delivery): Promise<DeliveryView> {
    const data = await this.#d.webhooks.eventData([row.event_id]);
    return toDeliveryView(row, await this.#d.webhooks.attemptsOf([row.id]), data.get(row.event_id) ?? null);
  }

  /** The account's secret for deliveries to agents' `webhook_url`, created on first request. */
  async agentSecret(accountId: string): Promise<{ secret: string; created_at: number; updated_at: number }> {
    const now = this.#d.clock.now();
    const row = await this.#d.webhooks.putAgentSecretIfMissing(accountId, this.#d.box.encrypt(generateWebhookSecret()), now);
    return { secret: this.#d.box.decrypt(row.secret_encrypted), created_at: row.created_at, updated_at: row.updated_at };
  }

  /** Replaces the agent-webhook secret; deliveries from now on are signed with the new one. */
  async rotateAgentSecret(accountId: string): Promise<{ secret: string; created_at: number; updated_at: number }> {
    await this.#d.webhooks.replaceAgentSecret(accountId, this.#d.box.encrypt(generateWebhookSecret()), this.#d.clock.now());
    return this.agentSecret(accountId);
  }

  /** Deliveries in the store by status (all accounts), for the metrics endpoint. */
  async countDeliveries(): Promise<Array<{ status: DeliveryStatus; count: number }>> {
    return this.#d.webhooks.countDeliveries();
  }

  /** Re-encrypts every stored secret not under the primary server key; returns how many. */
  async reencryptSecrets(): Promise<number> {
    let count = 0;
    for (const entry of await this.#d.webhooks.allEncryptedSecrets()) {
      if (this.#d.box.isCurrent(entry.value)) continue;
      await this.#d.webhooks.rewriteSecret(entry.table, entry.key, entry.value, this.#d.box.encrypt(this.#d.box.decrypt(entry.value)));
      count += 1;
    }
    return count;
  }
}

/** A non-empty list of known kinds (duplicates dropped), or exactly ["*"]. */
export function checkEvents(events: string[]): SubscribedEvents {
  if (events.length === 0) throw errors.invalidRequest('events must list at least one event kind, or be ["*"]');
  if (events.includes('*')) {
    if (events.length !== 1) throw errors.invalidRequest('events must be exactly ["*"] to subscribe to every kind');
    return ['*'];
  }
  const kinds: EventKind[] = [];
  for (const kind of events) {
    if (!isEventKind(kind)) {
      throw errors.invalidRequest(`unknown event kind "${kind}"; known kinds: ${EVENT_KINDS.join(', ')}, or "*"`, { event: kind });
    }
    kinds.push(kind);
  }
  return [...new Set(kinds)];
}

/** A subscription as the API answers it (without its secret). */
export function toWebhookView(webhook: Webhook): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    status: webhook.status,
    disabled_reason: webhook.disabled_reason,
    disabled_at: webhook.disabled_at,
    failing_since: webhook.failing_since,
    created_at: webhook.created_at,
    updated_at: webhook.updated_at,
  };
}

function toDeliveryView(row: Delivery, attempts: DeliveryAttempt[], data: EventData | null): DeliveryView {
  return {
    data,
    id: row.id,
    event_id: row.event_id,
    event: row.kind,
    webhook_id: row.webhook_id,
    url: row.url,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.next_attempt_at,
    last_attempt_at: row.last_attempt_at,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    last_latency_ms: row.last_latency_ms,
    delivered_at: row.delivered_at,
    created_at: row.created_at,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      started_at: a.started_at,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      outcome: a.outcome,
      error: a.error,
      response_excerpt: a.response_excerpt,
      next_attempt_at: a.next_attempt_at,
    })),
  };
}
