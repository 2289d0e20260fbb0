/**
 * Phone numbers: the account's numbers (how each is reached, its agents), import a Twilio number
 * (its account SID and auth token are sent once and never shown again), bind the inbound and
 * outbound agents, delete. For a Twilio number, the voice webhook URL to set in Twilio's console.
 */
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { Badge, Card, ErrorBox, Loading, messageOf, useAsync } from './ui.tsx';

interface PhoneNumber {
  phone_number: string;
  phone_number_pretty: string;
  phone_number_type: string;
  nickname: string | null;
  inbound_agent_id: string | null;
  outbound_agent_id: string | null;
  twilio_credentials_set?: boolean;
}

interface AgentChoice {
  agent_id: string;
  agent_name: string | null;
}

const EMPTY = { phone_number: '', nickname: '', twilio_account_sid: '', twilio_auth_token: '', inbound_agent_id: '', outbound_agent_id: '' };

export function PhoneNumbersPage({ api }: { api: Api }) {
  const list = useAsync(() => api.get<PhoneNumber[]>('/list-phone-numbers'), []);
  const agentList = useAsync(() => api.get<AgentChoice[]>('/list-agents'), []);
  const [form, setForm] = useState(EMPTY);
  const [formError, setFormError] = useState<string | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const agents = [...new Map((agentList.data ?? []).map((a) => [a.agent_id, a])).values()];
  const webhookUrl = `${location.origin}/twilio/voice`;
  const path = (n: string) => `/${encodeURIComponent(n)}`;

  const importNumber = async (event: Event) => {
    event.preventDefault();
    setFormError(null);
    try {
      await api.post('/import-phone-number', {
        phone_number: form.phone_number.trim(),
        twilio_account_sid: form.twilio_account_sid.trim(),
        twilio_auth_token: form.twilio_auth_token.trim(),
        ...(form.nickname.trim() ? { nickname: form.nickname.trim() } : {}),
        ...(form.inbound_agent_id ? { inbound_agent_id: form.inbound_agent_id } : {}),
        ...(form.outbound_agent_id ? { outbound_agent_id: form.outbound_agent_id } : {}),
      });
      // The credentials leave the page once sent.
      setForm(EMPTY);
      list.reload();
    } catch (e) {
      setFormError(messageOf(e));
    }
  };

  const bind = async (number: string, field: 'inbound_agent_id' | 'outbound_agent_id', agentId: string) => {
    setListError(null);
    try {
      await api.patch(`/update-phone-number${path(number)}`, { [field]: agentId === '' ? null : agentId });
      list.reload();
    } catch (e) {
      setListError(messageOf(e));
    }
  };

  const remove = async (number: string) => {
    setListError(null);
    try {
      await api.request('DELETE', `/delete-phone-number${path(number)}`);
      setConfirming(null);
      list.reload();
    } catch (e) {
      setListError(messageOf(e));
    }
  };

  const agentSelect = (id: string, value: string | null, onChange: (v: string) => void) => (
    <select id={id} value={value ?? ''} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      <option value="">— none —</option>
      {agents.map((a) => <option key={a.agent_id} value={a.agent_id}>{a.agent_name ?? a.agent_id}</option>)}
    </select>
  );
  const field = (name: keyof typeof EMPTY) => ({
    id: `number-${name.replace(/_/g, '-')}`,
    value: form[name],
    onInput: (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value }),
  });

  return (
    <main>
      <h1>Phone numbers</h1>
      <Card title="Numbers" id="phone-numbers">
        <Loading state={list} />
        <ErrorBox error={listError} id="phone-numbers-error" />
        {list.data && list.data.length === 0 && <p class="muted" id="phone-numbers-empty">No numbers yet: import one below.</p>}
        {list.data && list.data.length > 0 && (
          <table>
            <thead><tr><th>Number</th><th>Nickname</th><th>Reached</th><th>Inbound agent</th><th>Outbound agent</th><th /></tr></thead>
            <tbody>
              {list.data.map((n) => (
                <tr key={n.phone_number} data-number={n.phone_number}>
                  <td>{n.phone_number_pretty}</td>
                  <td>{n.nickname ?? '—'}</td>
                  <td><Badge value={n.phone_number_type} /></td>
                  <td>{agentSelect(`inbound-${n.phone_number.slice(1)}`, n.inbound_agent_id, (v) => void bind(n.phone_number, 'inbound_agent_id', v))}</td>
                  <td>{agentSelect(`outbound-${n.phone_number.slice(1)}`, n.outbound_agent_id, (v) => void bind(n.phone_number, 'outbound_agent_id', v))}</td>
                  <td>
                    {confirming === n.phone_number ? (
                      <>
                        <button type="button" data-action="confirm-delete" onClick={() => void remove(n.phone_number)}>Delete it</button>{' '}
                        <button type="button" onClick={() => setConfirming(null)}>Keep</button>
                      </>
                    ) : (
                      <button type="button" data-action="delete" onClick={() => setConfirming(n.phone_number)}>Delete</button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
      <Card title="Import a Twilio number" id="import-number">
        <p>
          Twilio's credentials are stored encrypted and never shown again. Then set the number's <em>A call comes in</em> webhook in
          Twilio's console to <code id="twilio-webhook-url">{webhookUrl}</code> (HTTP POST).
        </p>
        <form onSubmit={(e) => void importNumber(e)} id="import-number-form">
          <label>Number (E.164) <input {...field('phone_number')} placeholder="+14155550100" required /></label>
          <label>Nickname <input {...field('nickname')} /></label>
          <label>Account SID <input {...field('twilio_account_sid')} placeholder="AC..." autocomplete="off" required /></label>
          <label>Auth token <input {...field('twilio_auth_token')} type="password" autocomplete="off" required /></label>
          <label>Inbound agent {agentSelect('number-inbound-agent-id', form.inbound_agent_id, (v) => setForm({ ...form, inbound_agent_id: v }))}</label>
          <label>Outbound agent {agentSelect('number-outbound-agent-id', form.outbound_agent_id, (v) => setForm({ ...form, outbound_agent_id: v }))}</label>
          <button type="submit" id="import-number-submit">Import</button>
        </form>
        <ErrorBox error={formError} id="import-number-error" />
      </Card>
    </main>
  );
}
