import ipaddr from 'ipaddr.js';
import type { EnvReader } from './env-reader.ts';

/** Webhook delivery settings, read once with the rest of the config. */
export interface WebhookConfig {
  /**
   * Server keys that encrypt webhook secrets at rest (WEBHOOK_SECRET_KEYS: comma-separated base64
   * 32-byte keys; the first encrypts, all decrypt). Empty: a key generated in DATA_DIR/webhook-secret.key,
   * which only the embedded store allows: on PostgreSQL every server must hold the same key, so the
   * variable is required there.
   */
  readonly secretKeys: readonly string[];
  /** Ranges deliveries may reach although private/loopback/etc. (WEBHOOK_ALLOWED_CIDRS, comma-separated). */
  readonly allowedCidrs: readonly string[];
  /** TCP/TLS connect timeout (WEBHOOK_CONNECT_TIMEOUT_MS, default 5000 or WEBHOOK_TIMEOUT_MS if shorter). */
  readonly connectTimeoutMs: number;
  /** Whole-attempt timeout, connect to last byte read (WEBHOOK_TIMEOUT_MS, default 15000). */
  readonly timeoutMs: number;
  /**
   * Delays before each retry (WEBHOOK_RETRY_SCHEDULE, e.g. "5s,5m,30m,2h,5h,10h,10h", the default;
   * units ms, s, m, h, d). Each delay gets ±20 % jitter; after the last one the delivery fails.
   */
  readonly retryScheduleMs: readonly number[];
  /** A webhook failing without a success for this long is disabled (WEBHOOK_DISABLE_AFTER_MS, default 5 days). */
  readonly disableAfterMs: number;
  /** Run the delivery worker in this process (WEBHOOK_WORKER, default true). */
  readonly worker: boolean;
  /** Deliveries in flight at once in this process (WEBHOOK_CONCURRENCY, default 64). */
  readonly concurrency: number;
  /** Deliveries in flight at once to one endpoint in this process (WEBHOOK_ENDPOINT_CONCURRENCY, default 8). */
  readonly endpointConcurrency: number;
  /** How often the worker looks for other processes' events and due retries (WEBHOOK_POLL_INTERVAL_MS, default 500). */
  readonly pollIntervalMs: number;
  /** Finished deliveries, their attempts and events are deleted after this many days (WEBHOOK_LOG_RETENTION_DAYS, default 30). */
  readonly logRetentionDays: number;
}

export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses "5s", "30m", "1500ms" into milliseconds; null if malformed. */
export function parseDurationMs(text: string): number | null {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  const value = Number(match[1]) * (UNIT_MS[match[2] as string] ?? 0);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * Reads the WEBHOOK_* variables. `sharedStore`: the store is PostgreSQL, which several servers may
 * share; WEBHOOK_SECRET_KEYS is then required, since a key generated per server would encrypt
 * secrets its peers cannot read and leave deliveries they claim unsignable.
 */
export function readWebhookConfig(reader: EnvReader, problems: string[], sharedStore: boolean): WebhookConfig {
  const secretKeys = reader.list('WEBHOOK_SECRET_KEYS');
  if (sharedStore && secretKeys.length === 0) {
    problems.push(
      'WEBHOOK_SECRET_KEYS is required with DATABASE_URL: every server on one PostgreSQL database must encrypt and decrypt webhook secrets with the same key, and a key generated per server would leave its peers unable to sign deliveries (create one with openssl rand -base64 32 and give it to every server)',
    );
  }
  secretKeys.forEach((key, index) => {
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(key) || Buffer.from(key, 'base64').length !== 32) {
      problems.push(`WEBHOOK_SECRET_KEYS entry ${index + 1} must be 32 bytes in base64 (e.g. openssl rand -base64 32)`);
    }
  });
  const allowedCidrs = reader.list('WEBHOOK_ALLOWED_CIDRS');
  for (const cidr of allowedCidrs) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      problems.push(`WEBHOOK_ALLOWED_CIDRS entry "${cidr}" is not a CIDR range such as 10.0.0.0/8 or fd00::/8`);
    }
  }
  const scheduleText = reader.string('WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE);
  const retryScheduleMs: number[] = [];
  for (const item of scheduleText.split(',')) {
    const ms = parseDurationMs(item);
    if (ms === null || ms > 7 * 86_400_000) {
      problems.push(`WEBHOOK_RETRY_SCHEDULE must be comma-separated durations up to 7d such as 5s,5m,2h (got "${item.trim()}")`);
      break;
    }
    retryScheduleMs.push(ms);
  }
  const timeoutMs = reader.integer('WEBHOOK_TIMEOUT_MS', 15_000, 100, 300_000);
  // The connect timeout defaults to 5 s, or the whole timeout when that is shorter.
  const connectTimeoutMs = reader.integer('WEBHOOK_CONNECT_TIMEOUT_MS', Math.min(5_000, timeoutMs), 100, 60_000);
  if (connectTimeoutMs > timeoutMs) problems.push('WEBHOOK_CONNECT_TIMEOUT_MS must not exceed WEBHOOK_TIMEOUT_MS');
  return Object.freeze({
    secretKeys,
    allowedCidrs,
    connectTimeoutMs,
    timeoutMs,
    retryScheduleMs,
    disableAfterMs: reader.integer('WEBHOOK_DISABLE_AFTER_MS', 5 * 86_400_000, 60_000, 365 * 86_400_000),
    worker: reader.boolean('WEBHOOK_WORKER', true),
    concurrency: reader.integer('WEBHOOK_CONCURRENCY', 64, 1, 10_000),
    endpointConcurrency: reader.integer('WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1, 1_000),
    pollIntervalMs: reader.integer('WEBHOOK_POLL_INTERVAL_MS', 500, 10, 60_000),
    logRetentionDays: reader.integer('WEBHOOK_LOG_RETENTION_DAYS', 30, 1, 3650),
  });
}
