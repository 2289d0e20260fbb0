/**
 * Per-day call statistics for the dashboard's overview (`GET /v2/call-stats`), kept apart from
 * the calls repository's hot paths. Both stores group in SQL: calls per day and status with their
 * `call_analysis.call_successful` counts, and every reply's end-to-end latency (`latency.e2e.values`)
 * per day. Both read the `calls_account_created` index range (account, created_at).
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { CallStatus } from '../domain/call-status.ts';
import type { Database } from './schema.ts';
import type { Dialect } from './store.ts';

/** One day is this many ms. */
export const DAY_MS = 86_400_000;

export interface CallStatsRange {
  accountId: string;
  /** Calls created at or after this instant (epoch ms). */
  from: number;
  /** Calls created before this instant (epoch ms). */
  to: number;
  agentId?: string;
  /** Added to `created_at` before cutting days, so that days follow the caller's clock (ms, default 0: UTC days). */
  offsetMs: number;
}

/** Calls of one day and status; `day` counts days since the epoch in the offset's clock. */
export interface DayStatusCount {
  day: number;
  status: CallStatus;
  calls: number;
  successful: number;
  unsuccessful: number;
}

/** One agent reply's end-to-end latency (ms) on a day. */
export interface DayLatency {
  day: number;
  ms: number;
}

function dayOf(offsetMs: number): RawBuilder<number> {
  // Cast: node:sqlite may bind the numbers as REAL, which would make the division fractional.
  return sql<number>`cast((c.created_at + ${offsetMs}) / ${DAY_MS} as bigint)`;
}

function where(range: CallStatsRange): RawBuilder<unknown> {
  const agent = range.agentId === undefined ? sql`` : sql` and c.agent_id = ${range.agentId}`;
  return sql`c.account_id = ${range.accountId} and c.created_at >= ${range.from} and c.created_at < ${range.to}${agent}`;
}

/** `call_analysis.call_successful` is `value` (false when there is no analysis). */
function successIs(dialect: Dialect, value: boolean): RawBuilder<unknown> {
  if (dialect === 'postgres') return sql`(c.call_analysis::jsonb ->> 'call_successful') = ${String(value)}`;
  // json_extract gives JSON true / false as 1 / 0.
  return sql`json_extract(c.call_analysis, '$.call_successful') = ${value ? 1 : 0}`;
}

export async function countCallsByDay(db: Kysely<Database>, dialect: Dialect, range: CallStatsRange): Promise<DayStatusCount[]> {
  const day = dayOf(range.offsetMs);
  const { rows } = await sql<{ day: number | string; status: CallStatus; calls: number | string; successful: number | string | null; unsuccessful: number | string | null }>`
    select ${day} as day, c.call_status as status, count(*) as calls,
      sum(case when ${successIs(dialect, true)} then 1 else 0 end) as successful,
      sum(case when ${successIs(dialect, false)} then 1 else 0 end) as unsuccessful
    from calls c
    where ${where(range)}
    group by 1, 2
    order by 1, 2`.execute(db);
  return rows.map((r) => ({ day: Number(r.day), status: r.status, calls: Number(r.calls), successful: Number(r.successful ?? 0), unsuccessful: Number(r.unsuccessful ?? 0) }));
}

export async function e2eLatencyByDay(db: Kysely<Database>, dialect: Dialect, range: CallStatsRange): Promise<DayLatency[]> {
  const day = dayOf(range.offsetMs);
  const query =
    dialect === 'postgres'
      ? sql<{ day: number | string; ms: number | string }>`
          select ${day} as day, v.value::float8 as ms
          from calls c cross join lateral jsonb_array_elements_text(
            case when jsonb_typeof(c.latency::jsonb -> 'e2e' -> 'values') = 'array' then c.latency::jsonb -> 'e2e' -> 'values' else '[]'::jsonb end
          ) as v(value)
          where ${where(range)} and c.latency is not null`
      : sql<{ day: number | string; ms: number | string }>`
          select ${day} as day, v.value as ms
          from calls c, json_each(c.latency, '$.e2e.values') as v
          where ${where(range)} and c.latency is not null and json_type(c.latency, '$.e2e.values') = 'array'`;
  const { rows } = await query.execute(db);
  return rows.map((r) => ({ day: Number(r.day), ms: Number(r.ms) })).filter((r) => Number.isFinite(r.ms));
}
