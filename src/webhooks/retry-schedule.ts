/** Fraction of each delay added or removed at random, so retries of many deliveries spread out. */
export const JITTER_FRACTION = 0.2;
/** A receiver's Retry-After is honoured up to this long. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export interface RetryDecision {
  /** Null when no attempt is left: the delivery has failed. */
  delayMs: number | null;
}

/**
 * Delay before the next attempt after attempt number `attempt` (1-based) failed, or null when the
 * schedule is exhausted. The scheduled delay gets ±20 % jitter; a 429's Retry-After is honoured
 * (never retried sooner than asked), clamped to 24 h.
 */
export function retryDelayMs(
  attempt: number,
  scheduleMs: readonly number[],
  options: { retryAfterMs?: number | null; random?: () => number } = {},
): number | null {
  const base = scheduleMs[attempt - 1];
  if (base === undefined) return null;
  const random = options.random ?? Math.random;
  const jittered = Math.round(base * (1 - JITTER_FRACTION + 2 * JITTER_FRACTION * random()));
  const asked = options.retryAfterMs;
  if (asked === null || asked === undefined) return jittered;
  return Math.max(jittered, Math.min(asked, MAX_RETRY_AFTER_MS));
}
