/** Calls: a filterable list and a call's page. */
import { useEffect, useState } from 'preact/hooks';
import type { CallView } from '../../src/services/call.view.ts';
import { AnalysisView, LatencyTable, TranscriptView, formatDuration, formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { Badge, Card, ErrorBox, Json, Loading, go, messageOf, useAsync } from './ui.tsx';

/** The API's call object, as the server's own types define it (type-only: nothing of the server is bundled). */
export type Call = CallView;

const STATUSES = ['registered', 'ongoing', 'ended', 'error'];
const PAGE = 50;

export function CallsPage({ api }: { api: Api }) {
  const [status, setStatus] = useState('');
  const [agentId, setAgentId] = useState('');
  const [since, setSince] = useState('');
  const [calls, setCalls] = useState<Call[]>([]);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const agents = useAsync(() => api.get<{ agent_id: string; agent_name: string | null }[]>('/list-agents'), []);

  const load = async (after?: string) => {
    setLoading(true);
    setError(null);
    const filter: Record<string, unknown> = {};
    if (status) filter.call_status = [status];
    if (agentId) filter.agent_id = [agentId];
    if (since) filter.start_timestamp = { lower_threshold: new Date(since).getTime() };
    try {
      const page = await api.post<Call[]>('/v2/list-calls', {
        filter_criteria: filter,
        limit: PAGE,
        ...(after ? { pagination_key: after } : {}),
      });
      setCalls((existing) => (after ? [...existing, ...page] : page));
      setMore(page.length === PAGE);
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(), [status, agentId, since]);

  return (
    <main>
      <h1>Calls</h1>
      <div class="row" id="call-filters">
        <label>Status{' '}
          <select id="filter-status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Agent{' '}
          <select id="filter-agent" value={agentId} onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {(agents.data ?? []).map((a) => <option key={a.agent_id} value={a.agent_id}>{a.agent_name ?? a.agent_id}</option>)}
          </select>
        </label>
        <label>Started since{' '}
          <input id="filter-since" type="datetime-local" value={since} onChange={(e) => setSince((e.target as HTMLInputElement).value)} />
        </label>
        <button class="secondary" onClick={() => void load()}>Refresh</button>
      </div>
      <ErrorBox error={error} />
      <table id="calls">
        <thead>
          <tr><th>Call</th><th>Agent</th><th>Status</th><th>Reason</th><th>Started</th><th>Duration</th></tr>
        </thead>
        <tbody>
          {calls.map((c) => (
            <tr key={c.call_id} class="clickable" data-call-id={c.call_id} onClick={() => go(`/calls/${c.call_id}`)}>
              <td><a href={`#/calls/${c.call_id}`}>{c.call_id}</a></td>
              <td>{c.agent_name ?? c.agent_id} <span class="muted">v{c.agent_version}</span></td>
              <td><Badge value={c.call_status} /></td>
              <td>{c.disconnection_reason ?? '—'}</td>
              <td>{formatTime(c.start_timestamp ?? c.created_at)}</td>
              <td>{formatDuration(c.duration_ms)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && calls.length === 0 && !error && <p class="muted">No calls match.</p>}
      {loading && <p class="muted">Loading…</p>}
      {more && !loading && <button class="secondary" onClick={() => void load(calls[calls.length - 1]?.call_id)}>Load more</button>}
    </main>
  );
}

export function CallPage({ api, callId }: { api: Api; callId: string }) {
  const call = useAsync(() => api.get<Call>(`/v2/get-call/${encodeURIComponent(callId)}`), [callId]);
  const c = call.data;
  return (
    <main>
      <p><a href="#/calls">← Calls</a></p>
      <h1>Call <code>{callId}</code></h1>
      <Loading state={call} />
      {c && (
        <>
          <div class="grid2">
            <Card title="Status" id="call-status">
              <dl class="kv">
                <dt>Status</dt><dd><Badge value={c.call_status} /></dd>
                <dt>Reason</dt><dd>{c.disconnection_reason ?? '—'}</dd>
                <dt>Agent</dt><dd>{c.agent_name ?? '—'} <code>{c.agent_id}</code> v{c.agent_version}</dd>
                <dt>Duration</dt><dd>{formatDuration(c.duration_ms)}</dd>
                <dt>Storage</dt><dd>{c.data_storage_setting}</dd>
                <dt>Flow node / state</dt><dd>{c.current_node_id ?? c.current_state ?? '—'}</dd>
              </dl>
            </Card>
            <Card title="Timeline" id="timeline">
              <ol class="timeline">
                <li>Created {formatTime(c.created_at)}</li>
                {c.start_timestamp !== null && <li>Joined {formatTime(c.start_timestamp)}</li>}
                {c.end_timestamp !== null && <li>Ended {formatTime(c.end_timestamp)} ({c.disconnection_reason})</li>}
              </ol>
            </Card>
          </div>
          <Card title="Recording" id="recording-card">
            <Recording api={api} url={c.recording_url} />
          </Card>
          <Card title="Transcript"><TranscriptView items={c.transcript_object} id="call-transcript" /></Card>
          {c.transcript_with_tool_calls?.some((e) => e.role === 'tool_call_invocation' || e.role === 'tool_call_result') && (
            <Card title="Tool calls" id="tool-calls">
              <ol class="tool-calls">
                {c.transcript_with_tool_calls.map((e, i) =>
                  e.role === 'tool_call_invocation' ? (
                    <li key={i}><b>{e.name}</b> <code>{e.tool_call_id}</code> <code>{e.arguments}</code></li>
                  ) : e.role === 'tool_call_result' ? (
                    <li key={i}>result <code>{e.tool_call_id}</code> <pre>{e.content}</pre></li>
                  ) : null,
                )}
              </ol>
            </Card>
          )}
          <Card title="Latency"><LatencyTable latency={c.latency} /></Card>
          <Card title="Analysis"><AnalysisView analysis={c.call_analysis} /></Card>
          <div class="grid2">
            <Card title="Metadata" id="metadata"><Json value={c.metadata} /></Card>
            <Card title="Custom attributes" id="custom-attributes"><Json value={c.custom_attributes} /></Card>
          </div>
          <Card title="Dynamic variables">
            <Json value={{ ...(c.service_llm_dynamic_variables as object | null), ...(c.override_dynamic_variables as object | null) }} />
          </Card>
        </>
      )}
    </main>
  );
}

/** The recording is behind the API key: fetched with it, then played from a Blob URL. */
function Recording({ api, url }: { api: Api; url: string | null }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!url) return;
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
  if (!url) return <p class="muted">No recording.</p>;
  if (error) return <ErrorBox error={`Could not load the recording: ${error}`} />;
  if (!src) return <p class="muted">Loading the recording…</p>;
  return <audio id="recording" controls src={src} />;
}
