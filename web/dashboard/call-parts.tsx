/**
 * Pieces of the call page: the recording (signed URL or Blob), the transcript with times that
 * seeks the recording, the function calls, the node path and the latency per turn as a chart.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { ErrorBox, messageOf } from './ui.tsx';

/** One line of `transcript_object`: `start_ms` / `end_ms` from the call's start, when the server kept them. */
export interface TimedEntry {
  role: string;
  content: string;
  start_ms?: number;
  end_ms?: number;
  cut_off?: boolean;
}

/** `m:ss.s` from ms. */
export function clock(ms: number): string {
  const seconds = ms / 1000;
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s < 10 ? '0' : ''}${s.toFixed(1)}`;
}

/** A recording URL that plays without the API key: it carries a signature (`token=` or `signature=`). */
export function isSignedUrl(url: string): boolean {
  const query = new URL(url, location.href).searchParams;
  return query.has('token') || query.has('signature') || query.has('sig');
}

/**
 * The recording player. A signed `recording_url` plays directly; otherwise the file is behind
 * the API key and is fetched with it, then played from a Blob URL. `onAudio` receives the element
 * (for seeking), `onTime` the playing position in ms.
 */
export function Recording({ api, url, onAudio, onTime }: { api: Api; url: string | null; onAudio: (audio: HTMLAudioElement | null) => void; onTime: (ms: number) => void }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setSrc(null);
    setError(null);
    if (!url) return;
    if (isSignedUrl(url)) {
      // Played from this page's own server (recording_url names the public base URL, which may
      // be another address of it): the path and the signed query are what matter.
      const signed = new URL(url, location.href);
      setSrc(signed.pathname + signed.search);
      return;
    }
    let blobUrl: string | null = null;
    let live = true;
    // Same origin only: recording_url may name the public base URL; the path is what matters.
    api.blobUrl(new URL(url, location.href).pathname).then(
      (u) => (live ? setSrc((blobUrl = u)) : URL.revokeObjectURL(u)),
      (e: unknown) => live && setError(messageOf(e)),
    );
    return () => {
      live = false;
      if (blobUrl) URL.revokeObjectURL(blobUrl);
    };
  }, [url]);
  if (!url) return <p class="muted" id="recording-none">No recording (the call kept none, or its storage setting keeps none).</p>;
  if (error) return <ErrorBox error={`Could not load the recording: ${error}`} id="recording-error" />;
  if (!src) return <p class="muted">Loading the recording…</p>;
  return (
    <audio
      id="recording"
      controls
      preload="metadata"
      src={src}
      ref={onAudio}
      onTimeUpdate={(e) => onTime((e.target as HTMLAudioElement).currentTime * 1000)}
      onSeeked={(e) => onTime((e.target as HTMLAudioElement).currentTime * 1000)}
    />
  );
}

/**
 * The finished call's transcript with each line's start time. A line with a time is a button:
 * it seeks the recording there and plays; the line being played is highlighted.
 */
export function TimedTranscript({ items, audio, positionMs }: { items: TimedEntry[] | null; audio: HTMLAudioElement | null; positionMs: number }) {
  if (!items || items.length === 0) return <p class="muted" id="call-transcript">No transcript.</p>;
  const seek = (ms: number) => {
    if (!audio) return;
    audio.currentTime = ms / 1000;
    void audio.play().catch(() => undefined); // a browser may refuse autoplay: the position is set anyway
  };
  return (
    <ol class="transcript timed" id="call-transcript">
      {items.map((item, index) => {
        const timed = typeof item.start_ms === 'number';
        const playing = timed && positionMs > 0 && positionMs >= item.start_ms! && positionMs < (item.end_ms ?? item.start_ms!);
        return (
          <li
            key={index}
            class={`${item.role === 'agent' ? 'agent' : 'user'}${item.cut_off ? ' cut' : ''}${playing ? ' playing' : ''}${timed && audio ? ' seekable' : ''}`}
            data-role={item.role}
            data-start-ms={timed ? item.start_ms : undefined}
            onClick={timed && audio ? () => seek(item.start_ms!) : undefined}
            onKeyDown={timed && audio ? (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), seek(item.start_ms!)) : undefined}
            tabIndex={timed && audio ? 0 : undefined}
            role={timed && audio ? 'button' : undefined}
            title={timed && audio ? 'Play from here' : undefined}
          >
            <span class="who">
              {item.role === 'agent' ? 'Agent' : 'User'}
              {timed && <> · <time>{clock(item.start_ms!)}</time>{typeof item.end_ms === 'number' && <>–<time>{clock(item.end_ms)}</time></>}</>}
              {item.cut_off ? ' (cut off)' : ''}
            </span>
            {item.content}
          </li>
        );
      })}
    </ol>
  );
}

/** An entry of `transcript_with_tool_calls` (Retell's shape): utterances, tool calls and node transitions. */
interface ToolEntry {
  role: string;
  tool_call_id?: string;
  name?: string;
  arguments?: unknown;
  content?: unknown;
  successful?: boolean;
  former_node_id?: string | null;
  former_node_name?: string;
  new_node_id?: string;
  new_node_name?: string;
  time_sec?: number;
}

const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/** The function calls of `transcript_with_tool_calls`: each invocation with its arguments and result. */
export function ToolCalls({ entries }: { entries: unknown }) {
  if (!Array.isArray(entries)) return <p class="muted" id="tool-calls">No function calls recorded for this call.</p>;
  const list = entries as ToolEntry[];
  const invocations = list.filter((e) => e.role === 'tool_call_invocation');
  if (invocations.length === 0) return <p class="muted" id="tool-calls">No function calls in this call.</p>;
  return (
    <ol class="tool-calls" id="tool-calls">
      {invocations.map((call, index) => {
        const result = list.find((e) => e.role === 'tool_call_result' && e.tool_call_id === call.tool_call_id);
        return (
          <li key={call.tool_call_id ?? index} data-tool={call.name}>
            <strong><code>{call.name ?? '(unnamed)'}</code></strong>
            {result?.successful === false && <span class="badge error">failed</span>}
            <div class="grid2">
              <div><h3>Arguments</h3><pre>{asText(call.arguments ?? {})}</pre></div>
              <div><h3>Result</h3>{result ? <pre>{asText(result.content)}</pre> : <p class="muted">No result recorded.</p>}</div>
            </div>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * The flow's path, from the `node_transition` entries of `transcript_with_tool_calls` that the
 * server keeps for every flow call: each node entered, with its name and when (seconds into the
 * call). A call without moves shows the node it was in (`current_node_id`).
 */
export function NodePath({ entries, currentNodeId, currentState }: { entries: unknown; currentNodeId: string | null; currentState: string | null }) {
  const transitions = Array.isArray(entries) ? (entries as ToolEntry[]).filter((e) => e.role === 'node_transition' && e.new_node_id) : [];
  if (transitions.length > 0) {
    const first = transitions[0]!;
    const steps = [
      ...(first.former_node_id ? [{ id: first.former_node_id, name: first.former_node_name, at: undefined as number | undefined }] : []),
      ...transitions.map((t) => ({ id: t.new_node_id!, name: t.new_node_name, at: t.time_sec })),
    ];
    return (
      <ol class="node-path" id="node-path">
        {steps.map((step, i) => (
          <li key={i} data-node={step.id}>
            {step.name ? <>{step.name} <code class="muted">{step.id}</code></> : <code>{step.id}</code>}
            {step.at !== undefined && <span class="muted"> {step.at.toFixed(1)} s</span>}
          </li>
        ))}
      </ol>
    );
  }
  if (currentNodeId) return <p id="node-path">Stayed in <code>{currentNodeId}</code></p>;
  if (currentState) return <p id="node-path">Last state: <code>{currentState}</code></p>;
  return <p class="muted" id="node-path">No flow node (not a conversation-flow call, or it never started).</p>;
}

const SERIES: [key: string, label: string][] = [
  ['e2e', 'end to end'],
  ['asr', 'recognition'],
  ['llm', 'language model'],
  ['tts', 'synthesis'],
];

/**
 * Latency per turn: one bar per agent reply for end to end (`latency.e2e.values`), with the
 * recognition, model and synthesis parts beside it when measured. SVG drawn here, no library.
 */
export function LatencyChart({ latency }: { latency: unknown }) {
  const report = latency && typeof latency === 'object' ? (latency as Record<string, { values?: unknown } | null>) : {};
  const series = SERIES.map(([key, label]) => ({ key, label, values: Array.isArray(report[key]?.values) ? (report[key].values as unknown[]).filter((v): v is number => typeof v === 'number') : [] })).filter((s) => s.values.length > 0);
  if (series.length === 0) return <p class="muted" id="latency-chart">No per-turn latency measured.</p>;
  const turns = Math.max(...series.map((s) => s.values.length));
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const width = 640;
  const height = 180;
  const left = 44;
  const bottom = 22;
  const plotH = height - bottom - 8;
  const groupW = (width - left) / turns;
  const barW = Math.max(2, Math.min(28, (groupW - 6) / series.length));
  const y = (v: number) => 8 + plotH - (v / max) * plotH;
  const ticks = [0, max / 2, max];
  return (
    <figure class="chart" id="latency-chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label="Latency per turn, ms">
        {ticks.map((t) => (
          <g key={t}>
            <line class="grid" x1={left} x2={width} y1={y(t)} y2={y(t)} />
            <text class="axis" x={left - 4} y={y(t) + 4} text-anchor="end">{Math.round(t)}</text>
          </g>
        ))}
        {Array.from({ length: turns }, (_, turn) => (
          <g key={turn} data-turn={turn + 1}>
            {series.map((s, i) => {
              const v = s.values[turn];
              if (v === undefined) return null;
              const x = left + turn * groupW + 3 + i * barW;
              return (
                <rect key={s.key} class={`bar ${s.key}`} x={x} y={y(v)} width={barW - 1} height={Math.max(1, 8 + plotH - y(v))} data-series={s.key} data-ms={Math.round(v)}>
                  <title>{`Turn ${turn + 1}, ${s.label}: ${Math.round(v)} ms`}</title>
                </rect>
              );
            })}
            <text class="axis" x={left + turn * groupW + groupW / 2} y={height - 6} text-anchor="middle">{turn + 1}</text>
          </g>
        ))}
      </svg>
      <figcaption class="legend">
        {series.map((s) => <span key={s.key} class={`key ${s.key}`}>{s.label}</span>)}
        <span class="muted">ms per agent reply (turn)</span>
      </figcaption>
    </figure>
  );
}
