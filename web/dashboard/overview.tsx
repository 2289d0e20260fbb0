/**
 * Overview: calls per day (by status) and the reply latency p50 / p90 per day, from
 * `GET /v2/call-stats` (aggregated by the server, days in the browser's time zone). SVG charts.
 */
import { useState } from 'preact/hooks';
import type { CallStatsDay, CallStatsResponse } from '../../src/services/call-stats.schemas.ts';
import type { Api } from './api.ts';
import { Card, Loading, useAsync } from './ui.tsx';

const RANGES = [7, 14, 30, 90];
const DAY_MS = 86_400_000;

const W = 640;
const H = 200;
const LEFT = 44;
const BOTTOM = 24;
const TOP = 8;
const PLOT_H = H - BOTTOM - TOP;

/** Up to ~8 x-axis labels (MM-DD), evenly spaced. */
function xLabels(days: CallStatsDay[], x: (i: number) => number) {
  const step = Math.max(1, Math.ceil(days.length / 8));
  return days.map((d, i) => (i % step === 0 ? <text key={d.date} class="axis" x={x(i)} y={H - 6} text-anchor="middle">{d.date.slice(5)}</text> : null));
}

function yAxis(max: number, y: (v: number) => number) {
  return [0, max / 2, max].map((t) => (
    <g key={t}>
      <line class="grid" x1={LEFT} x2={W} y1={y(t)} y2={y(t)} />
      <text class="axis" x={LEFT - 4} y={y(t) + 4} text-anchor="end">{Math.round(t)}</text>
    </g>
  ));
}

/** Calls per day, stacked: ended, error, and the rest (registered, ongoing). */
function CallsChart({ days }: { days: CallStatsDay[] }) {
  const max = Math.max(1, ...days.map((d) => d.calls));
  const slot = (W - LEFT) / days.length;
  const barW = Math.max(2, Math.min(36, slot - 4));
  const x = (i: number) => LEFT + i * slot + slot / 2;
  const y = (v: number) => TOP + PLOT_H - (v / max) * PLOT_H;
  return (
    <figure class="chart" id="calls-chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Calls per day">
        {yAxis(max, y)}
        {days.map((d, i) => {
          const parts: [string, number][] = [['ended', d.by_status.ended], ['error', d.by_status.error], ['other', d.by_status.registered + d.by_status.ongoing]];
          let base = 0;
          return (
            <g key={d.date} data-date={d.date} data-calls={d.calls}>
              {parts.map(([cls, n]) => {
                if (n === 0) return null;
                const top = base + n;
                const rect = <rect key={cls} class={`bar ${cls}`} x={x(i) - barW / 2} y={y(top)} width={barW} height={y(base) - y(top)}><title>{`${d.date}: ${n} ${cls === 'other' ? 'registered or ongoing' : cls}`}</title></rect>;
                base = top;
                return rect;
              })}
            </g>
          );
        })}
        {xLabels(days, x)}
      </svg>
      <figcaption class="legend">
        <span class="key st-ended">ended</span><span class="key st-error">error</span><span class="key st-other">registered / ongoing</span>
      </figcaption>
    </figure>
  );
}

/** p50 and p90 of the end-to-end reply latency per day; days without replies leave a gap. */
function LatencyOverTime({ days }: { days: CallStatsDay[] }) {
  const values = days.flatMap((d) => [d.e2e_latency_ms.p50, d.e2e_latency_ms.p90]).filter((v): v is number => v !== null);
  if (values.length === 0) return <p class="muted" id="latency-over-time">No replies measured in this range.</p>;
  const max = Math.max(1, ...values);
  const slot = (W - LEFT) / days.length;
  const x = (i: number) => LEFT + i * slot + slot / 2;
  const y = (v: number) => TOP + PLOT_H - (v / max) * PLOT_H;
  const series = (key: 'p50' | 'p90') => {
    // Consecutive measured days make one segment each.
    const segments: string[][] = [];
    let current: string[] = [];
    days.forEach((d, i) => {
      const v = d.e2e_latency_ms[key];
      if (v === null) {
        if (current.length) segments.push(current);
        current = [];
      } else current.push(`${x(i)},${y(v)}`);
    });
    if (current.length) segments.push(current);
    return (
      <g class={key}>
        {segments.map((points, i) => <polyline key={i} class={`line ${key}`} points={points.join(' ')} />)}
        {days.map((d, i) => {
          const v = d.e2e_latency_ms[key];
          return v === null ? null : (
            <circle key={d.date} class={`line ${key}`} cx={x(i)} cy={y(v)} r={3} data-date={d.date} data-series={key} data-ms={v}>
              <title>{`${d.date} ${key}: ${Math.round(v)} ms over ${d.e2e_latency_ms.num} replies`}</title>
            </circle>
          );
        })}
      </g>
    );
  };
  return (
    <figure class="chart" id="latency-over-time">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Reply latency per day, ms">
        {yAxis(max, y)}
        {series('p50')}
        {series('p90')}
        {xLabels(days, x)}
      </svg>
      <figcaption class="legend">
        <span class="key p50">p50</span><span class="key p90">p90</span><span class="muted">end to end, ms (user stops → agent speaks)</span>
      </figcaption>
    </figure>
  );
}

export function OverviewPage({ api }: { api: Api }) {
  const [range, setRange] = useState(14);
  const [agentId, setAgentId] = useState('');
  const agents = useAsync(() => api.get<{ agent_id: string; agent_name: string | null }[]>('/list-agents'), []);
  const stats = useAsync(() => {
    // The last `range` days, today included, cut at the browser's midnight (its current UTC offset).
    const to = Date.now();
    const midnight = new Date(to);
    midnight.setHours(0, 0, 0, 0);
    const from = midnight.getTime() - (range - 1) * DAY_MS;
    const params = new URLSearchParams({ from: String(from), to: String(to), utc_offset_minutes: String(-midnight.getTimezoneOffset()) });
    if (agentId) params.set('agent_id', agentId);
    return api.get<CallStatsResponse>(`/v2/call-stats?${params.toString()}`);
  }, [range, agentId]);
  const days = stats.data?.days ?? [];
  const total = days.reduce((n, d) => n + d.calls, 0);
  const successful = days.reduce((n, d) => n + d.successful, 0);
  const judged = successful + days.reduce((n, d) => n + d.unsuccessful, 0);
  const errors = days.reduce((n, d) => n + d.by_status.error, 0);
  return (
    <main>
      <h1>Overview</h1>
      <div class="row filters">
        <label>Last{' '}
          <select id="overview-range" value={range} onChange={(e) => setRange(Number((e.target as HTMLSelectElement).value))}>
            {RANGES.map((r) => <option key={r} value={r}>{r} days</option>)}
          </select>
        </label>
        <label>Agent{' '}
          <select id="overview-agent" value={agentId} onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}>
            <option value="">all</option>
            {(agents.data ?? []).map((a) => <option key={a.agent_id} value={a.agent_id}>{a.agent_name ?? a.agent_id}</option>)}
          </select>
        </label>
        <button class="secondary" onClick={stats.reload}>Refresh</button>
      </div>
      <Loading state={stats} />
      {stats.data && (
        <>
          <dl class="kv" id="overview-totals">
            <dt>Calls</dt><dd id="overview-calls">{total}</dd>
            <dt>Successful</dt><dd>{judged ? `${successful} of ${judged} analysed (${Math.round((successful / judged) * 100)} %)` : '—'}</dd>
            <dt>Errors</dt><dd>{errors}</dd>
          </dl>
          {total === 0 && <p class="muted" id="overview-empty">No calls in this range. Open an agent and press Test call to make one.</p>}
          <div class="grid2">
            <Card title="Calls per day"><CallsChart days={days} /></Card>
            <Card title="Reply latency"><LatencyOverTime days={days} /></Card>
          </div>
        </>
      )}
    </main>
  );
}
