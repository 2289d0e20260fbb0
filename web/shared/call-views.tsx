/** Views of a call's results shared by the demo page and the dashboard. */
import type { TranscriptEntry } from '../../src/protocol/media.messages.ts';

/** Time as local date and time, or a dash. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return new Date(ms).toLocaleString();
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * A transcript: the live one of `update` messages, or a finished call's `transcript_object`
 * (whose entries also carry `start_ms` / `end_ms`, not shown here).
 */
export function TranscriptView({ items, id }: { items: TranscriptEntry[] | null | undefined; id?: string }) {
  if (!items || items.length === 0) return <p class="muted" id={id}>No transcript.</p>;
  return (
    <ol class="transcript" id={id}>
      {items.map((item, index) => (
        <li key={index} class={`${item.role === 'agent' ? 'agent' : 'user'}${item.cut_off ? ' cut' : ''}`} data-role={item.role}>
          <span class="who">{item.role === 'agent' ? 'Agent' : 'User'}{item.cut_off ? ' (cut off)' : ''}</span>
          {item.content}
        </li>
      ))}
    </ol>
  );
}

interface Summary {
  p50?: number;
  p90?: number;
  p95?: number;
  p99?: number;
  min?: number;
  max?: number;
  num?: number;
}

const LATENCY_LABELS: Record<string, string> = {
  e2e: 'End to end (user stops → agent speaks)',
  asr: 'Speech recognition',
  llm: 'Language model (first text)',
  tts: 'Speech synthesis (first audio)',
};

/** The call's `latency` object: percentiles per component, in ms. */
export function LatencyTable({ latency }: { latency: unknown }) {
  const entries = latency && typeof latency === 'object' ? Object.entries(latency as Record<string, Summary | null>).filter(([, v]) => v && typeof v === 'object') : [];
  if (entries.length === 0) return <p class="muted" id="latency">No latency measured.</p>;
  const cell = (v: number | undefined) => (typeof v === 'number' ? `${Math.round(v)} ms` : '—');
  return (
    <table id="latency">
      <thead>
        <tr><th>Component</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>min</th><th>max</th><th>n</th></tr>
      </thead>
      <tbody>
        {entries.map(([key, s]) => (
          <tr key={key} data-latency={key}>
            <td title={LATENCY_LABELS[key] ?? key}>{key}</td>
            <td>{cell(s!.p50)}</td><td>{cell(s!.p90)}</td><td>{cell(s!.p95)}</td><td>{cell(s!.p99)}</td>
            <td>{cell(s!.min)}</td><td>{cell(s!.max)}</td><td>{s!.num ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The call's `call_analysis`: summary, success, sentiment, and any custom data. */
export function AnalysisView({ analysis }: { analysis: unknown }) {
  if (!analysis || typeof analysis !== 'object') return <p class="muted" id="analysis">No analysis.</p>;
  const a = analysis as Record<string, unknown>;
  const known = ['call_summary', 'call_successful', 'user_sentiment', 'in_voicemail'];
  const rest = Object.fromEntries(Object.entries(a).filter(([k]) => !known.includes(k)));
  return (
    <dl class="kv" id="analysis">
      <dt>Summary</dt><dd>{typeof a.call_summary === 'string' ? a.call_summary : '—'}</dd>
      <dt>Successful</dt><dd>{a.call_successful === undefined || a.call_successful === null ? '—' : a.call_successful ? 'yes' : 'no'}</dd>
      <dt>User sentiment</dt><dd>{typeof a.user_sentiment === 'string' ? a.user_sentiment : '—'}</dd>
      {Object.keys(rest).length > 0 && (
        <>
          <dt>Other</dt>
          <dd><pre>{JSON.stringify(rest, null, 2)}</pre></dd>
        </>
      )}
    </dl>
  );
}
