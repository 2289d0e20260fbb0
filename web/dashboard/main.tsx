/**
 * The /dashboard single-page app. Sign-in takes an API key and keeps it in memory only (not in
 * the URL, not in storage): a reload signs out. Every request goes to this server's REST API with
 * `Authorization: Bearer`; the bundle loads nothing from any other host.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Api, ApiError } from './api.ts';
import { CallPage, CallsPage } from './calls.tsx';
import { LeadsPage, TicketsPage } from './records.tsx';
import { KINDS, ResourceList, ResourcePage } from './resources.tsx';
import { ErrorBox, messageOf } from './ui.tsx';
import { WebhooksPage } from './webhooks.tsx';

function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await new Api(key.trim(), () => undefined).get('/list-agents'); // checks the key
      onSignedIn(key.trim());
    } catch (e) {
      setError(e instanceof ApiError && e.status === 401 ? 'That API key was not accepted.' : messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="narrow">
      <h1>Switchboard dashboard</h1>
      <form class="card" onSubmit={(e) => void submit(e)} id="sign-in">
        <p>Sign in with an API key (<code>npm run -s cli -- keys create</code>). It is kept in this tab's memory only: reloading the page signs you out.</p>
        <div class="row">
          <input id="api-key" type="password" autocomplete="off" placeholder="sb_..." size={56} value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
          <button id="sign-in-submit" type="submit" disabled={busy}>Sign in</button>
        </div>
        <ErrorBox error={error} id="sign-in-error" />
      </form>
    </main>
  );
}

const NAV: [string, string][] = [
  ['calls', 'Calls'],
  ['agents', 'Agents'],
  ['flows', 'Flows'],
  ['llms', 'Service LLMs'],
  ['webhooks', 'Webhooks'],
  ['leads', 'Leads'],
  ['tickets', 'Tickets'],
];

function Dashboard({ api, signOut }: { api: Api; signOut: () => void }) {
  const route = useRoute();
  const [section = 'calls', id] = route;
  let content;
  if (section === 'calls') content = id ? <CallPage api={api} callId={id} /> : <CallsPage api={api} />;
  else if (section === 'agents' || section === 'flows' || section === 'llms') {
    const kind = KINDS[section];
    content = id ? <ResourcePage api={api} kind={kind} id={id} /> : <ResourceList api={api} kind={kind} />;
  } else if (section === 'webhooks') content = <WebhooksPage api={api} />;
  else if (section === 'leads') content = <LeadsPage api={api} />;
  else if (section === 'tickets') content = <TicketsPage api={api} />;
  else content = <main><p>No such page. <a href="#/calls">Calls</a></p></main>;
  return (
    <>
      <nav class="top">
        <span class="brand">Switchboard</span>
        {NAV.map(([path, label]) => (
          <a key={path} href={`#/${path}`} class={section === path ? 'active' : ''} data-nav={path}>{label}</a>
        ))}
        <span class="spacer" />
        <a href="#/" id="sign-out" onClick={(e) => { e.preventDefault(); signOut(); }}>Sign out</a>
      </nav>
      {content}
    </>
  );
}

function App() {
  const [api, setApi] = useState<Api | null>(null);
  if (!api) {
    // A 401 later (key revoked) returns to the sign-in form.
    return <SignIn onSignedIn={(key) => setApi(new Api(key, () => setApi(null)))} />;
  }
  return <Dashboard api={api} signOut={() => setApi(null)} />;
}

render(<App />, document.getElementById('app')!);
