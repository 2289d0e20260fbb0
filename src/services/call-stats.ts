/**
 * The dashboard overview's statistics (`GET /v2/call-stats`): calls per day by status and outcome,
 * and the reply latency (end to end) p50 / p90 per day. SQL groups the calls and reads each
 * reply's latency on both stores (storage/call-stats.queries.ts); the percentiles are computed
 * here, the same way on both (SQLite has no percentile aggregate), by linear interpolation between
 * closest ranks like a call's own `latency` summary.
 */
import { CALL_STATUSES, type CallStatus } from '../domain/call-status.ts';
import { errors } from '../domain/errors.ts';
import { DAY_MS, countCallsByDay, e2eLatencyByDay } from '../storage/call-stats.queries.ts';
import type { Store } from '../storage/store.ts';
import { CALL_STATS_DEFAULT_DAYS, CALL_STATS_MAX_DAYS, type CallStatsDay, type CallStatsQuery, type CallStatsResponse } from './call-stats.schemas.ts';

/** Linear interpolation between closest ranks; `sorted` ascending, non-empty. Rounded to 0.01 ms. */
function percentile(sorted: readonly number[], p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return Math.round((a + (b - a) * (rank - lo)) * 100) / 100;
}

/** The statistics of `accountId`'s calls in the query's range, one entry per day (empty days included). */
export async function callStats(store: Store, nowMs: number, accountId: string, query: CallStatsQuery): Promise<CallStatsResponse> {
  const to = query.to === undefined ? nowMs : Number(query.to);
  const from = query.from === undefined ? to - CALL_STATS_DEFAULT_DAYS * DAY_MS : Number(query.from);
  const offsetMinutes = query.utc_offset_minutes === undefined ? 0 : Number(query.utc_offset_minutes);
  if (!(from < to)) throw errors.invalidRequest('from must be before to');
  if (to - from > CALL_STATS_MAX_DAYS * DAY_MS) throw errors.invalidRequest(`The range may cover at most ${CALL_STATS_MAX_DAYS} days`);
  if (Math.abs(offsetMinutes) > 840) throw errors.invalidRequest('utc_offset_minutes must be between -840 and 840');
  const offsetMs = offsetMinutes * 60_000;
  const range = { accountId, from, to, agentId: query.agent_id, offsetMs };
  const [counts, latencies] = await Promise.all([countCallsByDay(store.db, store.dialect, range), e2eLatencyByDay(store.db, store.dialect, range)]);

  const firstDay = Math.floor((from + offsetMs) / DAY_MS);
  const lastDay = Math.floor((to - 1 + offsetMs) / DAY_MS);
  const days = new Map<number, CallStatsDay & { values: number[] }>();
  for (let day = firstDay; day <= lastDay; day++) {
    days.set(day, {
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      start_timestamp: day * DAY_MS - offsetMs,
      calls: 0,
      by_status: Object.fromEntries(CALL_STATUSES.map((s) => [s, 0])) as Record<CallStatus, number>,
      successful: 0,
      unsuccessful: 0,
      e2e_latency_ms: { p50: null, p90: null, num: 0 },
      values: [],
    });
  }
  for (const row of counts) {
    const entry = days.get(row.day);
    if (!entry) continue;
    entry.calls += row.calls;
    entry.by_status[row.status] += row.calls;
    entry.successful += row.successful;
    entry.unsuccessful += row.unsuccessful;
  }
  for (const row of latencies) days.get(row.day)?.values.push(row.ms);
  return {
    from,
    to,
    utc_offset_minutes: offsetMinutes,
    days: [...days.values()].map(({ values, ...day }) => {
      if (values.length === 0) return day;
      const sorted = values.sort((a, b) => a - b);
      return { ...day, e2e_latency_ms: { p50: percentile(sorted, 50), p90: percentile(sorted, 90), num: sorted.length } };
    }),
  };
}
