import type { Generated } from 'kysely';
import type { LeadCustomFields } from '../../domain/lead.ts';
import type { TicketPriority, TicketStatus } from '../../domain/ticket.ts';
import type {
  AttemptOutcome,
  DeliveryLane,
  DeliveryStatus,
  DisabledReason,
  EventData,
  RecordedEventKind,
  SubscribedEvents,
  WebhookStatus,
} from '../../domain/webhook.ts';
import type { JsonText } from '../json-column.ts';

/**
 * Tables of webhooks, their events and deliveries, and of leads and tickets (migration 0004).
 * Times (`*_at`, `failing_since`, `locked_until`) are epoch milliseconds.
 */

type GeneratedId = Generated<number>;

export interface LeadTable {
  /** Integer id (SQLite rowid / PostgreSQL bigserial); generated on insert. */
  id: GeneratedId;
  account_id: string;
  name: string;
  phone: string;
  email: string | null;
  notes: string | null;
  /** JSON object of string, number or boolean values. */
  custom_fields: JsonText<LeadCustomFields> | null;
  /** The call whose conversation created it, if any. */
  call_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface TicketTable {
  id: GeneratedId;
  account_id: string;
  subject: string;
  description: string;
  priority: TicketPriority;
  status: TicketStatus;
  lead_id: number | null;
  call_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookTable {
  id: string;
  account_id: string;
  url: string;
  /** JSON array of event kinds, or ["*"]. */
  events: JsonText<SubscribedEvents>;
  /** The signing secret, AES-256-GCM encrypted under the server key (see lib/secret-box.ts). */
  secret_encrypted: string;
  status: WebhookStatus;
  /** Why it was disabled: gone (410) | failing (continuously failing for the disable window). */
  disabled_reason: DisabledReason | null;
  disabled_at: number | null;
  /** Start of the current run of failed attempts; null after a success. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

/** The account's secret for deliveries to agents' `webhook_url`. */
export interface AgentWebhookSecretTable {
  account_id: string;
  secret_encrypted: string;
  created_at: number;
  updated_at: number;
}

export interface WebhookEventTable {
  id: string;
  account_id: string;
  kind: RecordedEventKind;
  /**
   * The event's `data`, as JSON text: written once, never decoded by the server, sent byte for
   * byte inside every delivery's body.
   */
  data: JsonText<EventData>;
  created_at: number;
}

export interface WebhookDeliveryTable {
  id: string;
  event_id: string;
  account_id: string;
  /** The subscription, or null for an agent's `webhook_url`. */
  webhook_id: string | null;
  /** Destination when it was queued (the subscription's current URL is used at send time). */
  url: string;
  /** What the per-endpoint concurrency cap counts by: the webhook id, or `url:<url>`. */
  endpoint_key: string;
  kind: RecordedEventKind;
  status: DeliveryStatus;
  /** 0: first attempts and manual redeliveries; 1: automatic retries. */
  lane: DeliveryLane;
  /** 1 while a manual redelivery is queued (its failure is not rescheduled), else 0. */
  manual: 0 | 1;
  attempts: number;
  next_attempt_at: number | null;
  /** Lease: a worker owns the delivery until then. */
  locked_until: number | null;
  locked_by: string | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  delivered_at: number | null;
  created_at: number;
  updated_at: number;
  /** The attempt timeout, ms, of a delivery to an agent's `webhook_url` (its `webhook_timeout_ms`); null: the server's. */
  timeout_ms: number | null;
}

export interface WebhookAttemptTable {
  delivery_id: string;
  attempt: number;
  account_id: string;
  started_at: number;
  status_code: number | null;
  latency_ms: number;
  outcome: AttemptOutcome;
  error: string | null;
  /** Up to 1 KB of the response body, for the log. */
  response_excerpt: string | null;
  next_attempt_at: number | null;
}

export interface WebhookTables {
  leads: LeadTable;
  tickets: TicketTable;
  webhooks: WebhookTable;
  agent_webhook_secrets: AgentWebhookSecretTable;
  webhook_events: WebhookEventTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
}
