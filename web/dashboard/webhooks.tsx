/** Webhooks: list, create (the secret is shown once), send a test event, delete, and the delivery log (payload, each answer) with redeliver. */
import { useState } from 'preact/hooks';
import { formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { Badge, Card, ErrorBox, Loading, messageOf, useAsync } from './ui.tsx';

interface Webhook {
  id: string;
  url: string;
  events: string[];
  secret?: string;
  status: string;
  disabled_reason: string | null;
  failing_since: number | null;
  created_at: number;
}

interface Attempt {
  attempt: number;
  started_at: number;
  status_code: number | null;
  latency_ms: number;
  outcome: string;
  error: string | null;
  response_excerpt: string | null;
}

interface Delivery {
  id: string;
  event_id: string;
  event: string;
  webhook_id: string | null;
  url: string;
  status: string;
  attempt_count: number;
  next_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  data: Record<string, unknown> | null;
  attempts: Attempt[];
}

export function WebhooksPage({ api }: { api: Api }) {
  const list = useAsync(() => api.get<{ webhooks: Webhook[]; available_events: string[] }>('/api/v1/webhooks/list.php'), []);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['*']);
  const [formError, setFormError] = useState<string | null>(null);
  const [created, setCreated] = useState<Webhook | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [logFilter, setLogFilter] = useState<{ webhook_id: string; status: string }>({ webhook_id: '', status: '' });
  const [tested, setTested] = useState<{ webhookId: string; at: number } | null>(null);

  const create = async (event: Event) => {
    event.preventDefault();
    setFormError(null);
    setCreated(null);
    try {
      const webhook = await api.post<Webhook>('/api/v1/webhooks/set.php', { url, events });
      // The secret is in the creation response only; it is not kept anywhere in the page after.
      setCreated(webhook);
      setUrl('');
      list.reload();
    } catch (e) {
      setFormError(messageOf(e));
    }
  };

  const remove = async (id: string) => {
    setListError(null);
    try {
      await api.post('/api/v1/webhooks/delete.php', { id });
      setConfirming(null);
      list.reload();
    } catch (e) {
      setListError(messageOf(e));
    }
  };

  // The log reloads after a test event is queued, and once more a moment later, when it has been answered.
  const sendTest = async (id: string) => {
    setListError(null);
    try {
      await api.post('/api/v1/webhooks/test.php', { id });
      setTested({ webhookId: id, at: Date.now() });
      setTimeout(() => setTested({ webhookId: id, at: Date.now() }), 1500);
    } catch (e) {
      setListError(messageOf(e));
    }
  };

  const toggle = (name: string) => {
    if (name === '*') return setEvents(['*']);
    const rest = events.filter((e) => e !== '*');
    const next = rest.includes(name) ? rest.filter((e) => e !== name) : [...rest, name];
    setEvents(next.length === 0 ? ['*'] : next);
  };

  return (
    <main>
      <h1>Webhooks</h1>
      <Card title="Add a webhook" id="webhook-create">
        <form onSubmit={(e) => void create(e)}>
          <div class="row">
            <input id="webhook-url" type="url" placeholder="https://example.com/hooks/switchboard" size={50} required value={url}
              onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
            <button id="webhook-submit" type="submit">Create</button>
          </div>
          <div class="row" id="webhook-events">
            <label><input type="checkbox" checked={events.includes('*')} onChange={() => toggle('*')} /> all events</label>
            {(list.data?.available_events ?? []).map((name) => (
              <label key={name}><input type="checkbox" checked={events.includes(name)} onChange={() => toggle(name)} /> {name}</label>
            ))}
          </div>
        </form>
        <ErrorBox error={formError} id="webhook-error" />
        {created?.secret && (
          <div class="notice" id="webhook-secret-notice">
            <p>Webhook <code>{created.id}</code> created. Its signing secret is shown <strong>only this once</strong>: store it now.</p>
            <div class="secret" id="webhook-secret">{created.secret}</div>
            <p><button class="secondary" onClick={() => setCreated(null)}>I have stored it</button></p>
          </div>
        )}
      </Card>

      <Card title="Webhooks" id="webhook-list">
        <Loading state={list} />
        <ErrorBox error={listError} />
        {list.data && list.data.webhooks.length === 0 && <p class="muted">No webhooks yet.</p>}
        {list.data && list.data.webhooks.length > 0 && (
          <div class="table-wrap"><table>
            <thead><tr><th>URL</th><th>Events</th><th>Status</th><th>Created</th><th /></tr></thead>
            <tbody>
              {list.data.webhooks.map((w) => (
                <tr key={w.id} data-webhook-id={w.id}>
                  <td class="id">{w.url}<br /><code class="muted">{w.id}</code></td>
                  <td>{w.events.join(', ')}</td>
                  <td><Badge value={w.status} />{w.disabled_reason ? ` (${w.disabled_reason})` : ''}</td>
                  <td>{formatTime(w.created_at)}</td>
                  <td>
                    {confirming === w.id ? (
                      <span class="row">
                        <button class="danger" data-action="confirm-delete" onClick={() => void remove(w.id)}>Confirm delete</button>
                        <button class="secondary" onClick={() => setConfirming(null)}>Cancel</button>
                      </span>
                    ) : (
                      <span class="row">
                        <button class="secondary" data-action="test" disabled={w.status !== 'active'} onClick={() => void sendTest(w.id)}>Send a test event</button>
                        <button class="secondary" data-action="delete" onClick={() => setConfirming(w.id)}>Delete</button>
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table></div>
        )}
      </Card>

      <Card title="Delivery log" id="deliveries">
        <div class="row">
          <label>Webhook{' '}
            <select value={logFilter.webhook_id} onChange={(e) => setLogFilter({ ...logFilter, webhook_id: (e.target as HTMLSelectElement).value })}>
              <option value="">any</option>
              {(list.data?.webhooks ?? []).map((w) => <option key={w.id} value={w.id}>{w.url}</option>)}
            </select>
          </label>
          <label>Status{' '}
            <select value={logFilter.status} onChange={(e) => setLogFilter({ ...logFilter, status: (e.target as HTMLSelectElement).value })}>
              <option value="">any</option>
              {['pending', 'delivered', 'failed', 'cancelled'].map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </label>
        </div>
        {tested && <div class="notice" id="test-event-notice">A test event (<code>webhook.test</code>) was queued to <code>{tested.webhookId}</code>; it shows below.</div>}
        <DeliveryLog api={api} filter={logFilter} refresh={tested?.at ?? 0} />
      </Card>
    </main>
  );
}

function DeliveryLog({ api, filter, refresh }: { api: Api; filter: { webhook_id: string; status: string }; refresh: number }) {
  const query = new URLSearchParams(Object.entries(filter).filter(([, v]) => v !== '')).toString();
  const log = useAsync(() => api.get<{ deliveries: Delivery[] }>(`/api/v1/webhooks/deliveries.php${query ? `?${query}` : ''}`), [query, refresh]);
  const [open, setOpen] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const redeliver = async (id: string) => {
    setError(null);
    setMessage(null);
    try {
      await api.post('/api/v1/webhooks/redeliver.php', { delivery_id: id });
      setMessage(`Delivery ${id} queued again.`);
      log.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <>
      <div class="row"><button class="secondary" id="deliveries-refresh" onClick={log.reload}>Refresh</button></div>
      <Loading state={log} />
      <ErrorBox error={error} />
      {message && <div class="notice" id="redeliver-notice">{message}</div>}
      {log.data && log.data.deliveries.length === 0 && <p class="muted">No deliveries yet.</p>}
      {log.data && log.data.deliveries.length > 0 && (
        <div class="table-wrap"><table id="delivery-table">
          <thead><tr><th>Event</th><th>URL</th><th>Status</th><th>Attempts</th><th>Last result</th><th>Created</th><th /></tr></thead>
          <tbody>
            {log.data.deliveries.map((d) => (
              <>
                <tr key={d.id} data-delivery-id={d.id} data-event={d.event} class="clickable" onClick={() => setOpen(open === d.id ? null : d.id)}>
                  <td>{d.event}</td>
                  <td class="id">{d.url}</td>
                  <td><Badge value={d.status} /></td>
                  <td>{d.attempt_count}</td>
                  <td>{d.last_status_code ?? '—'} {d.last_error ?? ''}</td>
                  <td>{formatTime(d.created_at)}</td>
                  <td><button class="secondary" data-action="redeliver" onClick={(e) => { e.stopPropagation(); void redeliver(d.id); }}>Redeliver</button></td>
                </tr>
                {open === d.id && (
                  <tr key={`${d.id}-attempts`}>
                    <td colSpan={7} class="delivery-detail">
                      {d.attempts.length === 0 ? <span class="muted">No attempts yet.</span> : (
                        <ol>
                          {d.attempts.map((a) => (
                            <li key={a.attempt} data-attempt={a.attempt}>
                              {formatTime(a.started_at)}: {a.outcome}, HTTP {a.status_code ?? '—'}, {a.latency_ms} ms{a.error ? ` (${a.error})` : ''}
                              {a.response_excerpt ? <pre class="excerpt" data-field="response">{a.response_excerpt}</pre> : null}
                            </li>
                          ))}
                        </ol>
                      )}
                      <h3>Payload</h3>
                      <p class="muted">Each attempt's body carries this data: <code>{'{"event", "data", "sent_at"}'}</code> (Retell's agent events: <code>{'{"event", "call"}'}</code>).</p>
                      <pre data-field="payload">{JSON.stringify({ event: d.event, data: d.data }, null, 2)}</pre>
                    </td>
                  </tr>
                )}
              </>
            ))}
          </tbody>
        </table></div>
      )}
    </>
  );
}
