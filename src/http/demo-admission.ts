import ipaddr from 'ipaddr.js';
import type { Clock } from '../lib/clock.ts';
import type { Metrics } from '../lib/metrics.ts';
import { TokenBuckets } from '../lib/token-bucket.ts';
import type { Call } from '../domain/call.ts';
import { isFinal } from '../domain/call-status.ts';
import { errors } from '../domain/errors.ts';

export interface DemoLimits {
  /** New demo calls per minute per client address (IPv6: per /64), refilled continuously. */
  ratePerMinute: number;
  /** Demo calls registered or in progress at once, in this process. */
  maxConcurrentCalls: number;
}

/** A place held for one demo call while it is created: `created` keeps it, `release` frees it. */
export interface DemoTicket {
  created(callId: string): void;
  release(): void;
}

/** How long a refused client is told to wait when every demo call is in progress, ms. */
const BUSY_RETRY_AFTER_MS = 10_000;
/** The store is asked how the demo's calls are doing at most this often, ms. */
const REFRESH_EVERY_MS = 1_000;

/**
 * The /demo page's own limits on new calls, apart from the operator's API budget (the demo's
 * calls take nothing from the account's create-web-call bucket): a token bucket per client
 * address, and a cap on demo calls registered or in progress at once. Beyond either the client
 * gets 429 with `Retry-After` (`demo_rate_limited`, `demo_busy`), counted in
 * `switchboard_demo_refusals_total{reason}`.
 *
 * An attempt within its address's limit takes a token from the address's bucket even when the
 * cap then refuses it, so one address hammering a busy demo runs out of its own budget first.
 *
 * The demo's calls are remembered here until the store says they ended or their token expired
 * unused (asked at most once a second, and only when the cap is reached), so memory is bounded by
 * the cap. Limits are per process.
 */
export class DemoAdmission {
  readonly #clock: Clock;
  readonly #limits: DemoLimits;
  readonly #readCall: (callId: string) => Promise<Call | undefined>;
  readonly #buckets: TokenBuckets;
  readonly #refusals;
  /** Demo calls not known to have ended: the token's expiry while registered, null once joined. */
  readonly #calls = new Map<string, { tokenExpiresAt: number | null }>();
  #creating = 0;
  #lastRefreshMs = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | null = null;

  constructor(deps: { clock: Clock; limits: DemoLimits; readCall: (callId: string) => Promise<Call | undefined>; metrics: Metrics }) {
    this.#clock = deps.clock;
    this.#limits = deps.limits;
    this.#readCall = deps.readCall;
    this.#buckets = new TokenBuckets(deps.clock);
    this.#refusals = deps.metrics.counter('switchboard_demo_refusals_total', 'New /demo calls refused: rate_limited (per client address), busy (too many at once).', ['reason']);
  }

  /** Holds a place for one new call from `address`, or throws `demo_rate_limited` / `demo_busy`. */
  async admit(address: string): Promise<DemoTicket> {
    const taken = this.#buckets.take(clientKey(address), this.#limits.ratePerMinute);
    if (!taken.ok) {
      this.#refusals.inc({ reason: 'rate_limited' });
      throw errors.demoRateLimited(taken.retryAfterMs);
    }
    if (this.#inUse() >= this.#limits.maxConcurrentCalls) await this.#refresh();
    if (this.#inUse() >= this.#limits.maxConcurrentCalls) {
      this.#refusals.inc({ reason: 'busy' });
      throw errors.demoBusy(this.#busyRetryAfterMs());
    }
    this.#creating += 1;
    let settled = false;
    return {
      created: (callId) => {
        if (settled) return;
        settled = true;
        this.#creating -= 1;
        this.#calls.set(callId, { tokenExpiresAt: null });
      },
      release: () => {
        if (settled) return;
        settled = true;
        this.#creating -= 1;
      },
    };
  }

  #inUse(): number {
    return this.#calls.size + this.#creating;
  }

  /** Forgets the calls that ended; one refresh at a time, at most once a second. */
  async #refresh(): Promise<void> {
    if (this.#refreshing) return this.#refreshing;
    if (this.#clock.now() - this.#lastRefreshMs < REFRESH_EVERY_MS) return;
    this.#lastRefreshMs = this.#clock.now();
    this.#refreshing = (async () => {
      for (const callId of [...this.#calls.keys()]) {
        const call = await this.#readCall(callId);
        // A registered call whose token expired can no longer be joined: it is as good as ended.
        const unjoinable = call?.call_status === 'registered' && call.token_expires_at < this.#clock.now();
        if (!call || isFinal(call.call_status) || unjoinable) this.#calls.delete(callId);
        else this.#calls.set(callId, { tokenExpiresAt: call.call_status === 'registered' ? call.token_expires_at : null });
      }
    })().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  /** Until the first unjoined call's token expires, else 10 s. */
  #busyRetryAfterMs(): number {
    const now = this.#clock.now();
    let soonest = Number.POSITIVE_INFINITY;
    for (const { tokenExpiresAt } of this.#calls.values()) {
      if (tokenExpiresAt !== null) soonest = Math.min(soonest, tokenExpiresAt - now);
    }
    return Number.isFinite(soonest) ? Math.max(1_000, soonest) : BUSY_RETRY_AFTER_MS;
  }
}

/** The client a limit applies to: the address, an IPv4-mapped IPv6 one as IPv4, other IPv6 ones by /64. */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${parsed.toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}
