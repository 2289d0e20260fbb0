import type { AttemptOutcome, DeliveryLane, DeliveryStatus } from '../domain/webhook.ts';
import type { SendResult } from './http-client.ts';
import { retryDelayMs } from './retry-schedule.ts';

/** One finished attempt of a delivery, as `decideAttempt` needs it. */
export interface AttemptInput {
  /** This attempt's number, 1-based: the delivery's attempts before it, plus one. */
  attempt: number;
  /** A manual redelivery of a finished delivery: if it fails, it is not rescheduled. */
  manual: boolean;
  /** The lane the delivery was claimed from. */
  lane: DeliveryLane;
  /** What sending came to. */
  result: Pick<SendResult, 'failure' | 'statusCode' | 'retryAfterMs'>;
  /** When the attempt finished, epoch milliseconds: a retry is scheduled from then. */
  nowMs: number;
  /** Delays before the 2nd, 3rd, ... attempts, in milliseconds (see `retryDelayMs`). */
  retryScheduleMs: readonly number[];
  /** Uniform in [0, 1), for the retry delay's jitter. */
  random: () => number;
}

/**
 * What an attempt means for the subscription it was sent to (nothing is recorded for an agent's
 * `webhook_url`): `succeeded` ends its run of failures; `failed` starts or continues one (which
 * disables it once it lasts the disable window); `gone` disables it now (the receiver answered
 * 410); `unaffected` when the destination address was refused, since that is no fault of the receiver.
 */
export type WebhookEffect = 'succeeded' | 'failed' | 'gone' | 'unaffected';

/** What to record after an attempt. */
export interface AttemptDecision {
  /** The attempt's outcome in the delivery log. */
  outcome: AttemptOutcome;
  /** The delivery's status after the attempt: `pending` when a retry is scheduled. */
  status: Extract<DeliveryStatus, 'delivered' | 'pending' | 'failed'>;
  /** The delivery's lane after the attempt: retries go to lane 1, anything else stays. */
  lane: DeliveryLane;
  /** When the retry is due, epoch milliseconds; null when none is scheduled. */
  nextAttemptAt: number | null;
  webhook: WebhookEffect;
}

/**
 * Decides what an attempt's result means, first match wins: a 2xx is `delivered`; a refused
 * destination is `refused` (never retried); a 410 is `gone` (even on a manual redelivery); a
 * failed manual redelivery is `failed` (not retried); any other failure is `retrying` after the
 * jittered delay of the schedule (a 429's Retry-After is honoured, never retried sooner), or
 * `exhausted` once the schedule is used up.
 */
export function decideAttempt(input: AttemptInput): AttemptDecision {
  const { result } = input;
  if (result.failure === null) return { outcome: 'delivered', status: 'delivered', lane: input.lane, nextAttemptAt: null, webhook: 'succeeded' };
  if (result.failure === 'refused') return { outcome: 'refused', status: 'failed', lane: input.lane, nextAttemptAt: null, webhook: 'unaffected' };
  if (result.statusCode === 410) return { outcome: 'gone', status: 'failed', lane: input.lane, nextAttemptAt: null, webhook: 'gone' };
  if (input.manual) return { outcome: 'failed', status: 'failed', lane: input.lane, nextAttemptAt: null, webhook: 'failed' };
  const delayMs = retryDelayMs(input.attempt, input.retryScheduleMs, {
    retryAfterMs: result.statusCode === 429 ? result.retryAfterMs : null,
    random: input.random,
  });
  if (delayMs === null) return { outcome: 'exhausted', status: 'failed', lane: input.lane, nextAttemptAt: null, webhook: 'failed' };
  return { outcome: 'retrying', status: 'pending', lane: 1, nextAttemptAt: input.nowMs + delayMs, webhook: 'failed' };
}
