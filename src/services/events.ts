import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

export const EVENT_KINDS = ['lead.created', 'lead.updated', 'ticket.created', 'call.finished'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export interface AccountEvent {
  accountId: string;
  kind: EventKind;
  data: Record<string, unknown>;
  /** An extra destination for this event alone (an agent's `webhook_url` for `call.finished`). */
  agentWebhookUrl?: string | null;
}

/**
 * The transactional outbox: records an event and its deliveries with the same database handle
 * (the caller's transaction) as the change that caused it, so the two commit or fail together.
 */
export interface EventOutbox {
  record(db: Kysely<Database>, event: AccountEvent): Promise<void>;
}
