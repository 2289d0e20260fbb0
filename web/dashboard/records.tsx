/** Leads and tickets: lists. */
import { useEffect, useState } from 'preact/hooks';
import { formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { Badge, ErrorBox, messageOf } from './ui.tsx';

interface Page<T> {
  items: T[];
  next: number | null;
}

/** A paged list of an /api/v1/... `list.php` endpoint. */
function usePaged<T>(api: Api, path: string, field: string) {
  const [page, setPage] = useState<Page<T>>({ items: [], next: null });
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const load = async (after: number | null) => {
    setLoading(true);
    try {
      const json = await api.get<Record<string, unknown>>(`${path}?limit=50${after ? `&pagination_key=${after}` : ''}`);
      const items = (json[field] as T[]) ?? [];
      setPage((p) => ({ items: after ? [...p.items, ...items] : items, next: (json.next_pagination_key as number | null) ?? null }));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(null), [path]);
  return { ...page, error, loading, more: () => void load(page.next) };
}

interface Lead {
  id: number;
  name: string;
  phone: string;
  email: string | null;
  notes: string | null;
  call_id: string | null;
  created_at: number;
}

interface Ticket {
  id: number;
  subject: string;
  priority: string;
  status: string;
  lead_id: number | null;
  call_id: string | null;
  created_at: number;
}

const callLink = (id: string | null) => (id ? <a href={`#/calls/${id}`}>{id}</a> : '—');

export function LeadsPage({ api }: { api: Api }) {
  const leads = usePaged<Lead>(api, '/api/v1/leads/list.php', 'leads');
  return (
    <main>
      <h1>Leads</h1>
      <ErrorBox error={leads.error} />
      <div class="table-wrap"><table id="leads">
        <thead><tr><th>#</th><th>Name</th><th>Phone</th><th>E-mail</th><th>Notes</th><th>Call</th><th>Created</th></tr></thead>
        <tbody>
          {leads.items.map((l) => (
            <tr key={l.id} data-lead-id={l.id}>
              <td>{l.id}</td><td>{l.name}</td><td>{l.phone}</td><td>{l.email ?? '—'}</td><td>{l.notes ?? ''}</td><td>{callLink(l.call_id)}</td><td>{formatTime(l.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table></div>
      {leads.loading && <p class="muted">Loading…</p>}
      {!leads.loading && leads.items.length === 0 && !leads.error && <p class="muted">No leads yet.</p>}
      {leads.next !== null && !leads.loading && <button class="secondary" onClick={leads.more}>Load more</button>}
    </main>
  );
}

export function TicketsPage({ api }: { api: Api }) {
  const tickets = usePaged<Ticket>(api, '/api/v1/tickets/list.php', 'tickets');
  return (
    <main>
      <h1>Tickets</h1>
      <ErrorBox error={tickets.error} />
      <div class="table-wrap"><table id="tickets">
        <thead><tr><th>#</th><th>Subject</th><th>Priority</th><th>Status</th><th>Lead</th><th>Call</th><th>Created</th></tr></thead>
        <tbody>
          {tickets.items.map((t) => (
            <tr key={t.id} data-ticket-id={t.id}>
              <td>{t.id}</td><td>{t.subject}</td><td>{t.priority}</td><td><Badge value={t.status} /></td><td>{t.lead_id ?? '—'}</td><td>{callLink(t.call_id)}</td><td>{formatTime(t.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table></div>
      {tickets.loading && <p class="muted">Loading…</p>}
      {!tickets.loading && tickets.items.length === 0 && !tickets.error && <p class="muted">No tickets yet.</p>}
      {tickets.next !== null && !tickets.loading && <button class="secondary" onClick={tickets.more}>Load more</button>}
    </main>
  );
}
