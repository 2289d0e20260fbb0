import type { EventData, RecordedEventKind } from '../domain/webhook.ts';
import type { Executor } from '../storage/store.ts';

/** Something that happened in an account, to be reported to its webhooks. */
export interface AccountEvent {
  accountId: string;
  /** Our kinds go to the subscriptions that listen to them; Retell's agent-level kinds only to `agentWebhookUrl`. */
  kind: RecordedEventKind;
  data: EventData;
  /** An extra destination for this event alone (an agent's `webhook_url` for `call.finished` or Retell's events). */
  agentWebhookUrl?: string | null;
  /** A test event's one destination: this subscription alone, none of the others. */
  onlyWebhook?: { id: string; url: string };
  /** The agent's `webhook_timeout_ms` for the delivery to `agentWebhookUrl`; absent: the server's timeout. */
  agentWebhookTimeoutMs?: number | null;
}

/**
 * The transactional outbox: records an event and its deliveries with the same database handle
 * (the caller's transaction) as the change that caused it, so the two commit or fail together.
 */
export interface EventOutbox {
  record(db: Executor, event: AccountEvent): Promise<void>;
}
