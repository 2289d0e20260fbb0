/** Calls: a searchable, filterable list and a call's page. */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { DisconnectionReason } from '../../src/domain/call-status.ts';
import type { CallView } from '../../src/services/call.view.ts';
import { AnalysisView, LatencyTable, formatDuration, formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { LatencyChart, NodePath, Recording, TimedTranscript, ToolCalls } from './call-parts.tsx';
import { Badge, Card, ErrorBox, Json, Loading, go, messageOf, useAsync } from './ui.tsx';

/** The API's call object, as the server's own types define it (type-only: nothing of the server is bundled). */
export type Call = CallView;

const STATUSES = ['registered', 'ongoing', 'ended', 'error'];

/** Every disconnection reason, as the filter offers them (the type keeps the list complete). */
const REASONS = Object.keys({
  user_hangup: 1,
  agent_hangup: 1,
  inactivity: 1,
  max_duration_reached: 1,
  server_shutdown: 1,
  client_disconnected: 1,
  manual_stopped: 1,
  error_user_not_joined: 1,
  error_asr: 1,
  error_llm: 1,
  error_llm_websocket_open: 1,
  error_llm_websocket_lost_connection: 1,
  error_llm_websocket_runtime: 1,
  error_llm_websocket_corrupt_payload: 1,
  error_tts: 1,
  error_no_audio_received: 1,
  error_engine_unavailable: 1,
  error_client_flood: 1,
  error_server_lost: 1,
  error_unknown: 1,
  dial_busy: 1,
  dial_failed: 1,
  dial_no_answer: 1,
  voicemail_reached: 1,
  call_transfer: 1,
} satisfies Record<DisconnectionReason, 1>);
const PAGE = 50;

export function CallsPage({ api }: { api: Api }) {
  const [status, setStatus] = useState('');
  const [agentId, setAgentId] = useState('');
  const [since, setSince] = useState('');
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState('');
  const [query, setQuery] = useState('');
  const [search, setSearch] = useState('');
  const [calls, setCalls] = useState<Call[]>([]);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const agents = useAsync(() => api.get<{ agent_id: string; agent_name: string | null }[]>('/list-agents'), []);

  // Filters can change faster than the server answers: only the latest request's answer is shown.
  const latest = useRef(0);
  const load = async (after?: string) => {
    const request = ++latest.current;
    setLoading(true);
    setError(null);
    const filter: Record<string, unknown> = {};
    if (status) filter.call_status = [status];
    if (agentId) filter.agent_id = [agentId];
    if (since) filter.start_timestamp = { lower_threshold: new Date(since).getTime() };
    if (reason) filter.disconnection_reason = [reason];
    if (outcome) filter.call_successful = [outcome === 'successful'];
    if (search) filter.query = search;
    try {
      const page = await api.post<Call[]>('/v2/list-calls', {
        filter_criteria: filter,
        limit: PAGE,
        ...(after ? { pagination_key: after } : {}),
      });
      if (request !== latest.current) return;
      setCalls((existing) => (after ? [...existing, ...page] : page));
      setMore(page.length === PAGE);
    } catch (e) {
      if (request !== latest.current) return;
      setError(messageOf(e));
      if (!after) setCalls([]);
    } finally {
      if (request === latest.current) setLoading(false);
    }
  };
  useEffect(() => void load(), [status, agentId, since, reason, outcome, search]);
  const filtered = Boolean(status || agentId || since || reason || outcome || search);
  const pick = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLSelectElement).value);

  return (
    <main>
      <h1>Calls</h1>
      <form class="row" id="call-search" onSubmit={(e) => { e.preventDefault(); setSearch(query.trim()); }}>
        <input id="search" type="search" placeholder="Call id, words said, metadata value" maxLength={256} value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <button type="submit" id="search-submit">Search</button>
        {search && <button type="button" class="secondary" id="search-clear" onClick={() => { setQuery(''); setSearch(''); }}>Clear</button>}
      </form>
      <div class="row filters" id="call-filters">
        <label>Status{' '}
          <select id="filter-status" value={status} onChange={pick(setStatus)}>
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Outcome{' '}
          <select id="filter-outcome" value={outcome} onChange={pick(setOutcome)}>
            <option value="">any</option>
            <option value="successful">successful</option>
            <option value="unsuccessful">unsuccessful</option>
          </select>
        </label>
        <label>Reason{' '}
          <select id="filter-reason" value={reason} onChange={pick(setReason)}>
            <option value="">any</option>
            {REASONS.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </label>
        <label>Agent{' '}
          <select id="filter-agent" value={agentId} onChange={pick(setAgentId)}>
            <option value="">any</option>
            {(agents.data ?? []).map((a) => <option key={a.agent_id} value={a.agent_id}>{a.agent_name ?? a.agent_id}</option>)}
          </select>
        </label>
        <label>Started since{' '}
          <input id="filter-since" type="datetime-local" value={since} onChange={(e) => setSince((e.target as HTMLInputElement).value)} />
        </label>
        <button class="secondary" onClick={() => void load()}>Refresh</button>
      </div>
      <ErrorBox error={error} id="calls-error" />
      <div class="table-wrap">
        <table id="calls">
          <thead>
            <tr><th>Call</th><th>Agent</th><th>Status</th><th class="wide">Reason</th><th class="wide">Outcome</th><th>Started</th><th class="wide">Duration</th></tr>
          </thead>
          <tbody>
            {calls.map((c) => {
              const successful = (c.call_analysis as { call_successful?: boolean } | null)?.call_successful;
              return (
                <tr key={c.call_id} class="clickable" data-call-id={c.call_id} onClick={() => go(`/calls/${c.call_id}`)}>
                  <td class="id"><a href={`#/calls/${c.call_id}`}>{c.call_id}</a></td>
                  <td>{c.agent_name ?? c.agent_id} <span class="muted">v{c.agent_version}</span></td>
                  <td><Badge value={c.call_status} /></td>
                  <td class="wide">{c.disconnection_reason ?? '—'}</td>
                  <td class="wide">{successful === undefined ? '—' : successful ? 'successful' : 'unsuccessful'}</td>
                  <td>{formatTime(c.start_timestamp ?? c.created_at)}</td>
                  <td class="wide">{formatDuration(c.duration_ms)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {!loading && calls.length === 0 && !error && (
        <p class="muted" id="calls-empty">{filtered ? 'No calls match.' : 'No calls yet: open an agent and press Test call.'}</p>
      )}
      {loading && <p class="muted">Loading…</p>}
      {more && !loading && <button class="secondary" onClick={() => void load(calls[calls.length - 1]?.call_id)}>Load more</button>}
    </main>
  );
}

/** How the call was carried (the call object's `media`), in one line: `webrtc, opus 48 kHz; in 250 packets (12.3 kB), 3 lost, jitter 4.1 ms; out ...`. */
function mediaSummary(media: Call['media']): string {
  if (!media) return '—';
  const kb = (bytes: number | null) => (bytes === null ? '?' : `${(bytes / 1000).toFixed(1)} kB`);
  const count = (n: number | null) => (n === null ? '?' : String(n));
  const inbound = `in ${count(media.packets_in)} packets (${kb(media.bytes_in)})${media.packets_lost === null ? '' : `, ${media.packets_lost} lost`}${media.jitter_ms === null ? '' : `, jitter ${media.jitter_ms} ms`}`;
  return `${media.transport}, ${media.codec} ${media.sample_rate / 1000} kHz; ${inbound}; out ${count(media.packets_out)} packets (${kb(media.bytes_out)})`;
}

/**
 * One plain line for a call nobody talked on, or null: created and not joined yet (`registered`),
 * expired unjoined (`error_user_not_joined`), or joined without a sound (`error_no_audio_received`)
 * and nothing said. Such a call has no transcript, recording, latency or analysis to show.
 */
export function unjoinedLine(c: Pick<Call, 'call_status' | 'disconnection_reason' | 'transcript_object'>): string | null {
  if (c.call_status === 'registered') {
    return 'Created, not joined yet: join it with the access token from its creation answer before the token expires (30 s by default: ACCESS_TOKEN_TTL_MS) with the web SDK, cli join or Test call on the agent, or it ends as error_user_not_joined.';
  }
  if (c.disconnection_reason === 'error_user_not_joined') {
    return 'Never joined: nobody connected with its access token before it expired, so there is nothing to show. Create a call and join it at once (the web SDK, cli join, or Test call on the agent).';
  }
  if (c.disconnection_reason === 'error_no_audio_received' && !(Array.isArray(c.transcript_object) && c.transcript_object.length > 0)) {
    return 'Joined, but no audio arrived, so there is nothing to show: check the microphone permission and the connection (docs/media-protocol.md), then call again.';
  }
  return null;
}

export function CallPage({ api, callId }: { api: Api; callId: string }) {
  const call = useAsync(() => api.get<Call>(`/v2/get-call/${encodeURIComponent(callId)}`), [callId]);
  const [audio, setAudio] = useState<HTMLAudioElement | null>(null);
  const [position, setPosition] = useState(0);
  const c = call.data;
  // Added by the tool-calling work when present; Retell's name and shape.
  const withTools = c ? c.transcript_with_tool_calls : undefined;
  return (
    <main>
      <p><a href="#/calls">← Calls</a></p>
      <h1>Call <code class="id">{callId}</code></h1>
      <Loading state={call} />
      {c && unjoinedLine(c) !== null && (
        <p class="notice" id="call-unjoined">
          <Badge value={c.call_status} /> {unjoinedLine(c)} Agent: <a href={`#/agents/${c.agent_id}`}>{c.agent_name ?? c.agent_id}</a> v{c.agent_version}; created {formatTime(c.created_at)}.
        </p>
      )}
      {c && unjoinedLine(c) === null && (
        <>
          <div class="grid2">
            <Card title="Status" id="call-status">
              <dl class="kv">
                <dt>Status</dt><dd><Badge value={c.call_status} /></dd>
                <dt>Reason</dt><dd>{c.disconnection_reason ?? '—'}</dd>
                <dt>Agent</dt><dd>{c.agent_name ?? '—'} <a href={`#/agents/${c.agent_id}`}><code>{c.agent_id}</code></a> v{c.agent_version}</dd>
                <dt>Duration</dt><dd>{formatDuration(c.duration_ms)}</dd>
                <dt>Storage</dt><dd>{c.data_storage_setting}</dd>
                <dt>Carried</dt><dd id="call-media">{mediaSummary(c.media)}</dd>
              </dl>
            </Card>
            <Card title="Timeline" id="timeline">
              <ol class="timeline">
                <li>Created {formatTime(c.created_at)}</li>
                {c.start_timestamp !== null && <li>Joined {formatTime(c.start_timestamp)}</li>}
                {c.end_timestamp !== null && <li>Ended {formatTime(c.end_timestamp)} ({c.disconnection_reason})</li>}
              </ol>
              <h3>Flow path</h3>
              <NodePath entries={withTools} currentNodeId={c.current_node_id} currentState={c.current_state} />
            </Card>
          </div>
          <Card title="Recording and transcript" id="recording-card">
            <Recording api={api} url={c.recording_url} onAudio={setAudio} onTime={setPosition} />
            {audio && c.transcript_object ? <p class="muted">Click a line to play the recording from there.</p> : null}
            <TimedTranscript items={c.transcript_object} audio={audio} positionMs={position} />
          </Card>
          <Card title="Function calls"><ToolCalls entries={withTools} /></Card>
          <Card title="Latency" id="latency-card">
            <LatencyChart latency={c.latency} />
            <div class="table-wrap"><LatencyTable latency={c.latency} /></div>
          </Card>
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
