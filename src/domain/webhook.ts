/**
 * Webhook vocabulary: the event kinds, a subscription's filter and state, a delivery's status and
 * lane, and the outcomes an attempt is logged with. Storage types its columns with these, the
 * services and the worker decide with them, the HTTP schemas list them.
 */

/** Longest URL a webhook may be delivered to (a subscription's `url`, an agent's `webhook_url`). */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Every event kind, in the order `list.php` answers them as `available_events`. */
export const EVENT_KINDS = ['lead.created', 'lead.updated', 'ticket.created', 'call.finished', 'test_run.finished'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** Whether `text` names an event kind. */
export function isEventKind(text: string): text is EventKind {
  return EVENT_KINDS.some((kind) => kind === text);
}

/**
 * Retell's agent-level events (issue 26): sent only to an agent's `webhook_url`, and only those its
 * `webhook_events` name, in Retell's shape (`{"event", "call"}`, signed with `x-retell-signature`).
 * Subscriptions never receive them; they have `call.finished`.
 */
export const AGENT_EVENT_KINDS = ['call_started', 'call_ended', 'call_analyzed'] as const;
export type AgentEventKind = (typeof AGENT_EVENT_KINDS)[number];

/** Whether `text` names one of Retell's agent-level events. */
export function isAgentEventKind(text: string): text is AgentEventKind {
  return AGENT_EVENT_KINDS.some((kind) => kind === text);
}

/**
 * A test event, sent on request (`test.php`, the dashboard's "Send a test event") to one
 * subscription alone, whatever kinds it listens to; never to others, never subscribable.
 */
export const TEST_EVENT_KIND = 'webhook.test';

/** What the outbox records: our event kinds, Retell's agent-level events, or a test event. */
export type RecordedEventKind = EventKind | AgentEventKind | typeof TEST_EVENT_KIND;

/** An event's `data`: a JSON object (the lead, the ticket, the call as its kind defines). */
export type EventData = Record<string, unknown>;

/** What a subscription listens to: some event kinds, or `['*']` for every kind (including kinds added later). */
export type SubscribedEvents = EventKind[] | ['*'];

/** Whether a subscription's `events` cover `kind`. */
export function subscribes(events: SubscribedEvents, kind: EventKind): boolean {
  return events.some((listed) => listed === '*' || listed === kind);
}

/** A subscription is sent to while `active`; `disabled` until it is updated again. */
export const WEBHOOK_STATUSES = ['active', 'disabled'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/**
 * Why a subscription was disabled: `gone`, a delivery was answered 410; `failing`, every attempt
 * failed for the disable window.
 */
export type DisabledReason = 'gone' | 'failing';

/** A delivery (one event to one destination): waiting to be sent, or finished one way or another. */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The queue's lanes: 0 for first attempts and manual redeliveries, 1 for automatic retries. */
export type DeliveryLane = 0 | 1;

/**
 * What one attempt came to, as the delivery log shows it: `delivered`; `retrying` (another attempt
 * is scheduled); `exhausted` (no attempt left); `refused` (the destination address is not allowed);
 * `gone` (answered 410, the subscription was disabled); `failed` (a manual redelivery that failed).
 */
export const ATTEMPT_OUTCOMES = ['delivered', 'retrying', 'exhausted', 'refused', 'gone', 'failed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];
