import type { Clock } from '../lib/clock.ts';
import type { CallRepository } from '../storage/call.repository.ts';
import type { WebhookRepository } from '../storage/webhook.repository.ts';
import { IDEMPOTENCY_WINDOW_MS } from './call.service.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Keeps the bookkeeping tables bounded: Idempotency-Keys past their 24 h window, and webhook
 * deliveries (with their attempts and events) finished longer ago than the log's retention.
 * Pending deliveries are never touched.
 */
export class HousekeepingService {
  readonly #calls: CallRepository;
  readonly #webhooks: WebhookRepository;
  readonly #clock: Clock;
  readonly #deliveryLogRetentionMs: number;

  constructor(deps: { calls: CallRepository; webhooks: WebhookRepository; clock: Clock; deliveryLogRetentionDays: number }) {
    this.#calls = deps.calls;
    this.#webhooks = deps.webhooks;
    this.#clock = deps.clock;
    this.#deliveryLogRetentionMs = deps.deliveryLogRetentionDays * DAY_MS;
  }

  async run(): Promise<{ deliveriesDeleted: number }> {
    const now = this.#clock.now();
    await this.#calls.deleteIdempotencyKeysBefore(now - IDEMPOTENCY_WINDOW_MS);
    const deliveriesDeleted = await this.#webhooks.pruneFinishedBefore(now - this.#deliveryLogRetentionMs);
    return { deliveriesDeleted };
  }
}
