/** Agents, conversation flows and service LLMs: lists, a form (agents) or the flow builder (flows) beside JSON editing, versions and their diff, the agents a flow serves. */
import { useEffect, useState } from 'preact/hooks';
import { formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { AgentForm, type AgentDraft, VersionDiff, jsonError } from './agent-form.tsx';
import { KnowledgeLink } from './knowledge.tsx';
import type { AgentDraft as LlmDraft } from './agent-settings.ts';
import { TestCall } from './test-call.tsx';
import { Card, ErrorBox, Json, Loading, go, messageOf, useAsync } from './ui.tsx';

/** How each kind of resource is reached through the API. */
interface Kind {
  /** Hash-route segment. */
  route: string;
  title: string;
  idField: string;
  list: string;
  get: (id: string) => string;
  update: (id: string) => string;
  create: string;
  /** Fields the server sets, left out of the editable JSON. */
  readOnly: string[];
  template: Record<string, unknown>;
  summary: (item: Record<string, any>) => string;
}

export const KINDS: Record<'agents' | 'flows' | 'llms', Kind> = {
  agents: {
    route: 'agents',
    title: 'Agents',
    idField: 'agent_id',
    list: '/list-agents',
    get: (id) => `/get-agent/${encodeURIComponent(id)}`,
    update: (id) => `/update-agent/${encodeURIComponent(id)}`,
    create: '/create-agent',
    readOnly: ['agent_id', 'version', 'created_at', 'last_modification_timestamp', 'accepted_without_effect'],
    template: { agent_name: 'New agent', response_engine: { type: 'conversation_flow', conversation_flow_id: 'conversation_flow_...' } },
    summary: (a) => `${a.agent_name ?? '(unnamed)'} · v${a.version} · ${a.response_engine?.type ?? ''}`,
  },
  flows: {
    route: 'flows',
    title: 'Conversation flows',
    idField: 'conversation_flow_id',
    list: '/list-conversation-flows',
    get: (id) => `/get-conversation-flow/${encodeURIComponent(id)}`,
    update: (id) => `/update-conversation-flow/${encodeURIComponent(id)}`,
    create: '/create-conversation-flow',
    readOnly: ['conversation_flow_id', 'created_at', 'last_modification_timestamp'],
    template: {
      start_node_id: 'greet',
      nodes: [{ id: 'greet', type: 'end', instruction: { type: 'static_text', text: 'Hello and goodbye.' } }],
    },
    summary: (f) => `${f.name ? `${f.name} · ` : ''}${(f.nodes as unknown[] | undefined)?.length ?? 0} nodes · starts at ${f.start_node_id}`,
  },
  llms: {
    route: 'llms',
    title: 'Service LLMs',
    idField: 'llm_id',
    list: '/list-service-llms',
    get: (id) => `/get-service-llm/${encodeURIComponent(id)}`,
    update: (id) => `/update-service-llm/${encodeURIComponent(id)}`,
    create: '/create-service-llm',
    readOnly: ['llm_id', 'created_at', 'last_modification_timestamp', 'accepted_without_effect'],
    template: { general_prompt: 'You are a helpful assistant.' },
    summary: (l) => `${l.model ?? 'default model'} · ${(l.general_prompt ?? '').slice(0, 60)}`,
  },
};

export function ResourceList({ api, kind }: { api: Api; kind: Kind }) {
  const list = useAsync(() => api.get<Record<string, any>[]>(kind.list), [kind.route]);
  return (
    <main>
      <div class="row">
        <h1>{kind.title}</h1>
        <span class="spacer" />
        <button class="secondary" id="new-resource" onClick={() => go(`/${kind.route}/new`)}>New</button>
      </div>
      <Loading state={list} />
      {list.data && list.data.length === 0 && <p class="muted" id="resources-empty">None yet: press New.</p>}
      {list.data && list.data.length > 0 && (
        <div class="table-wrap"><table id="resources">
          <thead><tr><th>Id</th><th>Summary</th><th class="wide">Modified</th>{kind.route === 'agents' && <th />}</tr></thead>
          <tbody>
            {list.data.map((item) => {
              const id = String(item[kind.idField]);
              return (
                <tr key={id} class="clickable" data-id={id} onClick={() => go(`/${kind.route}/${id}`)}>
                  <td class="id"><a href={`#/${kind.route}/${id}`}>{id}</a></td>
                  <td>{kind.summary(item)}</td>
                  <td class="wide">{formatTime(item.last_modification_timestamp)}</td>
                  {kind.route === 'agents' && (
                    <td><button class="secondary" data-action="test-call" onClick={(e) => { e.stopPropagation(); go(`/agents/${id}/test`); }}>Test call</button></td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table></div>
      )}
    </main>
  );
}

/** The flow drawing, loaded on first use (its layout library is a separate chunk of the bundle). */
function LazyFlowGraph({ flow }: { flow: Record<string, unknown> }) {
  const module = useAsync(() => import('./flow-graph.tsx'), []);
  if (module.error) return <ErrorBox error={`Could not load the drawing: ${module.error}`} />;
  if (!module.data) return <p class="muted">Drawing…</p>;
  const { FlowGraph } = module.data;
  return <FlowGraph flow={flow} />;
}

/** The flow builder, loaded on first use (a separate chunk of the bundle, as the drawing is). */
function LazyFlowBuilder(props: { flow: Record<string, unknown>; onChange: (flow: Record<string, unknown>) => void; error: string | null; isNew: boolean }) {
  const module = useAsync(() => import('./flow-builder.tsx'), []);
  if (module.error) return <ErrorBox error={`Could not load the builder: ${module.error}`} />;
  if (!module.data) return <p class="muted">Loading the builder…</p>;
  const { FlowBuilder } = module.data;
  return <FlowBuilder {...props} />;
}

/** The service-LLM form, loaded on first use (a separate chunk, as the flow builder is). */
function LazyLlmForm(props: { api: Api; draft: LlmDraft; onChange: (next: LlmDraft) => void; error: string | null }) {
  const module = useAsync(() => import('./llm-form.tsx'), []);
  if (module.error) return <ErrorBox error={`Could not load the form: ${module.error}`} />;
  if (!module.data) return <p class="muted">Loading the form…</p>;
  const { LlmForm } = module.data;
  return <LlmForm {...props} />;
}

/** The agents whose response engine is this flow. */
function FlowAgents({ api, flowId }: { api: Api; flowId: string }) {
  const agents = useAsync(() => api.get<Record<string, any>[]>('/list-agents'), [flowId]);
  const using = (agents.data ?? []).filter((a) => a.response_engine?.conversation_flow_id === flowId);
  return (
    <Card title="Used by" id="flow-agents">
      <Loading state={agents} />
      {agents.data && using.length === 0 && <p class="muted">No agent uses this flow yet.</p>}
      <ul>
        {using.map((a) => <li key={a.agent_id}><a href={`#/agents/${a.agent_id}`}>{a.agent_name ?? a.agent_id}</a> <span class="muted">v{a.version}</span></li>)}
      </ul>
    </Card>
  );
}

/** An agent's Tests tab, loaded on first use (a separate chunk of the bundle). */
function LazyAgentTests({ api, agentId, versions }: { api: Api; agentId: string; versions: number[] }) {
  const module = useAsync(() => import('./agent-tests.tsx'), []);
  if (module.error) return <ErrorBox error={`Could not load the tests: ${module.error}`} />;
  if (!module.data) return <p class="muted">Loading the tests…</p>;
  const { AgentTests } = module.data;
  return <AgentTests api={api} agentId={agentId} versions={versions} />;
}

/** The resource without the fields the server sets. */
function editable(kind: Kind, item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !kind.readOnly.includes(k)));
}

/** One resource: a form (agents) or its JSON, editable; the API's validation errors appear under the editor. */
export function ResourcePage({ api, kind, id, focus }: { api: Api; kind: Kind; id: string; focus?: string }) {
  const isNew = id === 'new';
  const isAgent = kind.route === 'agents';
  const item = useAsync(() => (isNew ? Promise.resolve(null) : api.get<Record<string, unknown>>(kind.get(id))), [kind.route, id]);
  const versions = useAsync(
    () => (isAgent && !isNew ? api.get<Record<string, any>[]>(`/get-agent-versions/${encodeURIComponent(id)}`) : Promise.resolve([])),
    [kind.route, id],
  );
  const isFlow = kind.route === 'flows';
  const isLlm = kind.route === 'llms';
  const hasForm = isAgent || isFlow || isLlm;
  const [mode, setMode] = useState<'form' | 'json'>(hasForm ? 'form' : 'json');
  const [text, setText] = useState('');
  const [draft, setDraft] = useState<AgentDraft>({});
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [viewing, setViewing] = useState<Record<string, unknown> | null>(null);
  /** The resource the draft was loaded from: the editor shows only once it is this page's, so an edit made before is not overwritten by the load. */
  const [loadedFor, setLoadedFor] = useState<string | null>(null);
  const page = `${kind.route}/${id}`;

  const load = (value: Record<string, unknown>) => {
    const copy = editable(kind, value);
    setDraft(copy);
    setText(JSON.stringify(copy, null, 2));
    setLoadedFor(page);
  };
  useEffect(() => {
    if (isNew) load(kind.template);
    else if (item.data) load(item.data);
  }, [item.data, isNew, kind.route]);

  const switchTo = (next: 'form' | 'json') => {
    if (next === mode) return;
    if (next === 'json') {
      setText(JSON.stringify(draft, null, 2));
    } else {
      const problem = jsonError(text);
      if (problem) {
        setError(problem);
        return;
      }
      setDraft(JSON.parse(text) as AgentDraft);
    }
    setError(null);
    setMode(next);
  };

  const save = async () => {
    setError(null);
    setSaved(null);
    let body: unknown = draft;
    if (mode === 'json') {
      const problem = jsonError(text);
      if (problem) {
        setError(problem);
        return;
      }
      body = JSON.parse(text);
    }
    try {
      if (isNew) {
        const created = await api.post<Record<string, unknown>>(kind.create, body);
        go(`/${kind.route}/${String(created[kind.idField])}`);
        return;
      }
      const updated = await api.patch<Record<string, unknown>>(kind.update(id), body);
      load(updated);
      item.reload(); // the heading and the flow's drawing follow the saved definition
      setSaved(isAgent ? `Saved as version ${String(updated.version)}.` : 'Saved.');
      versions.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };

  const name = item.data ? ((isAgent ? item.data.agent_name : isFlow ? item.data.name : null) as string | null | undefined) : null;
  return (
    <main>
      <p><a href={`#/${kind.route}`}>← {kind.title}</a></p>
      <h1>{isNew ? `New (${kind.title.toLowerCase()})` : <>{name ? `${name} ` : ''}<code class="id">{id}</code></>}</h1>
      {!isNew && <Loading state={item} />}
      {isAgent && !isNew && (
        <nav class="tabs page-tabs" id="agent-tabs">
          <a href={`#/agents/${id}`} id="agent-tab-settings" class={focus === 'tests' ? '' : 'active'}>Settings</a>
          <a href={`#/agents/${id}/tests`} id="agent-tab-tests" class={focus === 'tests' ? 'active' : ''}>Tests</a>
        </nav>
      )}
      {isAgent && !isNew && focus === 'tests' ? (
        versions.data && <LazyAgentTests api={api} agentId={id} versions={versions.data.map((v) => Number(v.version))} />
      ) : <>
      {isAgent && !isNew && item.data && <TestCall api={api} agentId={id} focus={focus} />}
      {isFlow && !isNew && item.data && (
        <Card title="Drawing" id="flow-drawing"><LazyFlowGraph flow={item.data} /></Card>
      )}
      {isFlow && !isNew && <FlowAgents api={api} flowId={id} />}
      <div class={isFlow ? 'stack' : 'grid2'}>
        {loadedFor === page && <Card title={isNew ? 'Definition' : isAgent ? 'Latest version (saving makes a new version)' : 'Definition'} id="editor">
          {hasForm && (
            <div class="tabs" role="tablist">
              <button type="button" id="tab-form" class={mode === 'form' ? 'active' : ''} onClick={() => switchTo('form')}>{isFlow ? 'Builder' : 'Form'}</button>
              <button type="button" id="tab-json" class={mode === 'json' ? 'active' : ''} onClick={() => switchTo('json')}>JSON</button>
            </div>
          )}
          {mode === 'form' && isAgent ? (
            <AgentForm api={api} draft={draft} onChange={setDraft} error={error} withoutEffect={(item.data?.accepted_without_effect as string[] | undefined) ?? []} />
          ) : mode === 'form' && isLlm ? (
            <LazyLlmForm api={api} draft={draft} onChange={setDraft} error={error} />
          ) : mode === 'form' && isFlow ? (
            <LazyFlowBuilder flow={draft} onChange={setDraft} error={error} isNew={isNew} />
          ) : (
            <textarea class="json" id="json-editor" spellcheck={false} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
          )}
          <div class="row">
            <button id="save" onClick={() => void save()}>{isNew ? 'Create' : 'Save'}</button>
            {!isNew && item.data && <button class="secondary" id="revert" onClick={() => load(item.data!)}>Revert</button>}
          </div>
          <ErrorBox error={error} id="editor-error" />
          {saved && <div class="notice" id="editor-saved">{saved}</div>}
        </Card>}
        {isAgent && !isNew && (
          <Card title="Versions" id="versions">
            <Loading state={versions} />
            <div class="table-wrap">
              <table>
                <thead><tr><th>Version</th><th>Name</th><th>Created</th></tr></thead>
                <tbody>
                  {[...(versions.data ?? [])].reverse().map((v) => (
                    <tr key={v.version} class="clickable" data-version={v.version} onClick={() => setViewing(v)}>
                      <td>v{v.version}</td><td>{v.agent_name ?? '—'}</td><td>{formatTime(v.last_modification_timestamp ?? v.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {versions.data && (
              <>
                <h3>Compare versions</h3>
                <VersionDiff key={versions.data.length} versions={versions.data} />
              </>
            )}
            {viewing && (
              <>
                <h3>Version {String(viewing.version)}</h3>
                <Json value={viewing} />
              </>
            )}
          </Card>
        )}
        {isAgent && !isNew && item.data && (
          <Card title="Knowledge bases" id="agent-knowledge">
            <KnowledgeLink api={api} engine={item.data.response_engine as { type?: string; llm_id?: string } | undefined} />
          </Card>
        )}
        {!isAgent && !isNew && (
          <Card title="Versions">
            <p class="muted">{kind.title} are edited in place; the agents that use them are versioned.</p>
          </Card>
        )}
      </div>
      </>}
    </main>
  );
}
