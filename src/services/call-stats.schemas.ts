/** The shapes of `GET /v2/call-stats` (the dashboard overview); the service is call-stats.ts. */
import { Type, type Static } from '@sinclair/typebox';
import { CALL_STATUSES, type CallStatus } from '../domain/call-status.ts';
import { ResourceId } from '../domain/schema-kit.ts';

/** The longest range one request may cover, in days. */
export const CALL_STATS_MAX_DAYS = 92;
/** The range when `from` is not given, in days before `to`. */
export const CALL_STATS_DEFAULT_DAYS = 14;

/** Epoch milliseconds as query text (a function, so each use keeps its own description and a named type). */
const epochText = (description: string) => Type.String({ pattern: '^[0-9]{1,15}$', description });

export const CallStatsQuery = Type.Object(
  {
    from: Type.Optional(epochText(`Calls created at or after this instant, epoch ms (default: ${CALL_STATS_DEFAULT_DAYS} days before \`to\`).`)),
    to: Type.Optional(epochText('Calls created before this instant, epoch ms (default: now).')),
    agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: ResourceId.pattern, description: 'Only this agent\'s calls.' })),
    utc_offset_minutes: Type.Optional(
      Type.String({ pattern: '^-?[0-9]{1,3}$', description: 'Days are cut at midnight of this UTC offset, -840 to 840 minutes (default 0: UTC days). A browser sends `-new Date().getTimezoneOffset()`.' }),
    ),
  },
  { additionalProperties: false },
);
export type CallStatsQuery = Static<typeof CallStatsQuery>;

const Count = Type.Integer({ minimum: 0 });
const Ms = Type.Union([Type.Number(), Type.Null()]);

export const CallStatsDay = Type.Object({
  date: Type.String({ description: 'The day, YYYY-MM-DD in the requested offset.' }),
  start_timestamp: Type.Integer({ description: 'The day\'s first instant (epoch ms).' }),
  calls: Count,
  by_status: Type.Object(Object.fromEntries(CALL_STATUSES.map((s) => [s, Count])) as Record<CallStatus, typeof Count>),
  successful: Type.Integer({ minimum: 0, description: 'Calls whose `call_analysis.call_successful` is true.' }),
  unsuccessful: Type.Integer({ minimum: 0, description: 'Calls whose `call_analysis.call_successful` is false.' }),
  e2e_latency_ms: Type.Object({
    p50: Ms,
    p90: Ms,
    num: Type.Integer({ minimum: 0, description: 'Agent replies measured (null percentiles when 0).' }),
  }),
});
export type CallStatsDay = Static<typeof CallStatsDay>;

export const CallStatsResponse = Type.Object(
  {
    from: Type.Integer(),
    to: Type.Integer(),
    utc_offset_minutes: Type.Integer(),
    days: Type.Array(CallStatsDay),
  },
);
export type CallStatsResponse = Static<typeof CallStatsResponse>;
