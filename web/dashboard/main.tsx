/**
 * The /dashboard single-page app. Sign-in takes an API key and keeps it in this tab's
 * sessionStorage (never in the URL, a cookie or localStorage): a reload stays signed in, closing
 * the tab forgets it, and Sign out (or a 401) removes it. Every request goes to this server's REST
 * API with `Authorization: Bearer`; the bundle loads nothing from any other host.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Api, ApiError } from './api.ts';
import { CallPage, CallsPage } from './calls.tsx';
import { KnowledgeBasePage, KnowledgeBasesPage } from './knowledge.tsx';
import { OverviewPage } from './overview.tsx';
import { PhoneNumbersPage } from './phone-numbers.tsx';
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
        <p>Sign in with an API key (<code>npm run -s cli -- keys create</code>). It is kept for this tab's life only (sessionStorage): a reload keeps you signed in, closing the tab or Sign out forgets it.</p>
        <div class="row">
          <input id="api-key" type="password" autocomplete="off" placeholder="sb_..." value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
          <button id="sign-in-submit" type="submit" disabled={busy}>Sign in</button>
        </div>
        <ErrorBox error={error} id="sign-in-error" />
      </form>
    </main>
  );
}

const NAV: [string, string][] = [
  ['overview', 'Overview'],
  ['calls', 'Calls'],
  ['agents', 'Agents'],
  ['flows', 'Flows'],
  ['llms', 'Service LLMs'],
  ['knowledge-bases', 'Knowledge bases'],
  ['phone-numbers', 'Phone numbers'],
  ['webhooks', 'Webhooks'],
  ['leads', 'Leads'],
  ['tickets', 'Tickets'],
];

function Dashboard({ api, signOut }: { api: Api; signOut: () => void }) {
  const route = useRoute();
  const [section = 'calls', id, sub] = route;
  let content;
  if (section === 'overview') content = <OverviewPage api={api} />;
  else if (section === 'calls') content = id ? <CallPage api={api} callId={id} /> : <CallsPage api={api} />;
  else if (section === 'agents' || section === 'flows' || section === 'llms') {
    const kind = KINDS[section];
    content = id ? <ResourcePage api={api} kind={kind} id={id} focus={sub} /> : <ResourceList api={api} kind={kind} />;
  } else if (section === 'knowledge-bases') content = id ? <KnowledgeBasePage api={api} id={id} /> : <KnowledgeBasesPage api={api} />;
  else if (section === 'webhooks') content = <WebhooksPage api={api} />;
  else if (section === 'phone-numbers') content = <PhoneNumbersPage api={api} />;
  else if (section === 'leads') content = <LeadsPage api={api} />;
  else if (section === 'tickets') content = <TicketsPage api={api} />;
  else content = <main><p>No such page. <a href="#/calls">Calls</a></p></main>;
  return (
    <>
      <nav class="top">
        <span class="brand">Switchboard</span>
        <span class="links">
          {NAV.map(([path, label]) => (
            <a key={path} href={`#/${path}`} class={section === path ? 'active' : ''} data-nav={path}>{label}</a>
          ))}
        </span>
        <a href="#/" id="sign-out" onClick={(e) => { e.preventDefault(); signOut(); }}>Sign out</a>
      </nav>
      {content}
    </>
  );
}

/** Where the key is kept for the tab's life. */
const KEY_ITEM = 'switchboard.dashboard.apiKey';

function readKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null; // storage disabled: the key lives in memory only
  }
}

function writeKey(key: string | null): void {
  try {
    if (key === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
  } catch {
    // storage disabled: nothing kept, nothing to remove
  }
}

function App() {
  const signOut = () => {
    writeKey(null);
    setApi(null);
  };
  // A 401 later (key revoked) signs out and returns to the sign-in form.
  const open = (key: string) => new Api(key, signOut);
  const [api, setApi] = useState<Api | null>(() => {
    const key = readKey();
    return key ? open(key) : null;
  });
  if (!api) {
    return (
      <SignIn
        onSignedIn={(key) => {
          writeKey(key);
          setApi(open(key));
        }}
      />
    );
  }
  return <Dashboard api={api} signOut={signOut} />;
}

render(<App />, document.getElementById('app')!);
