/**
 * Knowledge bases (docs/knowledge-bases.md): the account's bases, a new one from texts and files,
 * a base's sources with their status and error (polled while one is being ingested), more
 * sources, deletes, a search box showing the chunks and scores a question retrieves, and the
 * agents that answer from a base. Bases are linked to an agent through its service LLM's
 * `knowledge_base_ids` and `kb_config` (the agent's page has the control: KnowledgeLink).
 */
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { Badge, Card, ErrorBox, Loading, go, messageOf, useAsync } from './ui.tsx';

interface Source {
  type: 'text' | 'document' | 'url';
  source_id: string;
  title?: string;
  filename?: string;
  url?: string;
  status: string;
  error: string | null;
  chunk_count: number;
  created_timestamp: number;
}

interface KnowledgeBase {
  knowledge_base_id: string;
  knowledge_base_name: string;
  status: string;
  knowledge_base_sources: Source[];
  last_refreshed_timestamp: number;
}

interface FoundChunk {
  text: string;
  score: number;
  source_id: string;
}

/** How often a base whose sources are being ingested is read again. */
const POLL_INTERVAL_MS = 1_000;
/** The file kinds the picker offers (the API decides by the file name's extension). */
const FILE_ACCEPT = '.md,.markdown,.txt,.text,.html,.htm,.pdf';

const path = (route: string, id: string) => `${route}/${encodeURIComponent(id)}`;

/** A source's name as the page shows it. */
function sourceName(source: Source): string {
  return source.title ?? source.filename ?? source.url ?? source.source_id;
}

/** A score in (0, 1] with three significant digits (small bases score low: 0.000123, not 0.000). */
export function formatScore(score: number): string {
  return String(Number(score.toPrecision(3)));
}

/** A file's bytes in base64 (what `knowledge_base_files[].content_base64` takes). */
async function base64Of(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

interface TextDraft {
  title: string;
  text: string;
}

/**
 * Texts and files for a new base or for more sources: `onSubmit` receives the API's source
 * lists (`knowledge_base_texts`, `knowledge_base_files`), only those given.
 */
function SourcesForm({ idPrefix, submitLabel, withName, onSubmit }: {
  idPrefix: string;
  submitLabel: string;
  withName: boolean;
  onSubmit: (body: Record<string, unknown>) => Promise<void>;
}) {
  const [name, setName] = useState('');
  const [texts, setTexts] = useState<TextDraft[]>([{ title: '', text: '' }]);
  const [files, setFiles] = useState<File[]>([]);
  const [fileKey, setFileKey] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const setText = (i: number, field: keyof TextDraft, value: string) => setTexts(texts.map((t, j) => (j === i ? { ...t, [field]: value } : t)));

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const body: Record<string, unknown> = {};
      if (withName) body.knowledge_base_name = name;
      const given = texts.filter((t) => t.title.trim() || t.text.trim());
      if (given.length > 0) body.knowledge_base_texts = given;
      if (files.length > 0) {
        body.knowledge_base_files = await Promise.all(files.map(async (f) => ({ file_name: f.name, content_base64: await base64Of(f) })));
      }
      await onSubmit(body);
      setName('');
      setTexts([{ title: '', text: '' }]);
      setFiles([]);
      setFileKey((k) => k + 1); // a new file input: the browser keeps no way to clear one's selection
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="form" id={`${idPrefix}-form`} onSubmit={(e) => void submit(e)}>
      {withName && <>
        <label for={`${idPrefix}-name`}>Name</label>
        <input id={`${idPrefix}-name`} value={name} maxLength={40} required onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </>}
      {texts.map((t, i) => (
        <Fragment key={i}>
          <label for={`${idPrefix}-text-title-${i}`}>Text {i + 1} title</label>
          <input id={`${idPrefix}-text-title-${i}`} value={t.title} maxLength={256} onInput={(e) => setText(i, 'title', (e.target as HTMLInputElement).value)} />
          <label for={`${idPrefix}-text-${i}`}>Text {i + 1}</label>
          <textarea id={`${idPrefix}-text-${i}`} rows={5} value={t.text} onInput={(e) => setText(i, 'text', (e.target as HTMLTextAreaElement).value)} />
        </Fragment>
      ))}
      <span />
      <div><button type="button" class="secondary" id={`${idPrefix}-add-text`} onClick={() => setTexts([...texts, { title: '', text: '' }])}>Another text</button></div>
      <label for={`${idPrefix}-files`}>Files</label>
      <input key={fileKey} id={`${idPrefix}-files`} type="file" multiple accept={FILE_ACCEPT} onChange={(e) => setFiles([...((e.target as HTMLInputElement).files ?? [])])} />
      <span class="hint">Markdown and plain text (.md, .txt); sent base64-encoded in the JSON body, 768 KiB each at most.</span>
      <span />
      <div><button type="submit" id={`${idPrefix}-submit`} disabled={busy}>{submitLabel}</button></div>
      <ErrorBox error={error} id={`${idPrefix}-error`} />
    </form>
  );
}

/** The account's knowledge bases and a form for a new one. */
export function KnowledgeBasesPage({ api }: { api: Api }) {
  const list = useAsync(() => api.get<KnowledgeBase[]>('/list-knowledge-bases'), []);
  return (
    <main>
      <h1>Knowledge bases</h1>
      <p class="muted">Documents agents answer from: a service LLM retrieves from its knowledge bases before every reply (link them on the agent's page).</p>
      <Loading state={list} />
      {list.data && list.data.length === 0 && <p class="muted" id="knowledge-bases-empty">None yet: create one below.</p>}
      {list.data && list.data.length > 0 && (
        <div class="table-wrap"><table id="knowledge-bases">
          <thead><tr><th>Name</th><th>Status</th><th>Sources</th><th class="wide">Changed</th></tr></thead>
          <tbody>
            {list.data.map((kb) => (
              <tr key={kb.knowledge_base_id} class="clickable" data-id={kb.knowledge_base_id} onClick={() => go(path('/knowledge-bases', kb.knowledge_base_id))}>
                <td><a href={`#${path('/knowledge-bases', kb.knowledge_base_id)}`}>{kb.knowledge_base_name}</a></td>
                <td><Badge value={kb.status} /></td>
                <td>{kb.knowledge_base_sources.length}</td>
                <td class="wide">{formatTime(kb.last_refreshed_timestamp)}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      )}
      <Card title="New knowledge base" id="new-knowledge-base">
        <SourcesForm idPrefix="kb-new" submitLabel="Create" withName onSubmit={async (body) => {
          const created = await api.post<KnowledgeBase>('/create-knowledge-base', body);
          go(path('/knowledge-bases', created.knowledge_base_id));
        }} />
      </Card>
    </main>
  );
}

/** A search as a call would make it: the chunks found, best first, with their scores and sources. */
function SearchBox({ api, kb }: { api: Api; kb: KnowledgeBase }) {
  const [query, setQuery] = useState('');
  const [topK, setTopK] = useState(3);
  const [found, setFound] = useState<FoundChunk[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const answer = await api.post<{ chunks: FoundChunk[] }>(path('/search-knowledge-base', kb.knowledge_base_id), { query, top_k: topK });
      setFound(answer.chunks);
    } catch (e) {
      setFound(null);
      setError(messageOf(e));
    }
  };
  const names = new Map(kb.knowledge_base_sources.map((s) => [s.source_id, sourceName(s)]));
  return (
    <>
      <form class="row" id="kb-search" onSubmit={(e) => void submit(e)}>
        <input id="kb-search-query" type="search" placeholder="A caller's question" maxLength={2000} required value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <label>Top <input id="kb-search-top-k" type="number" min={1} max={20} value={topK} onInput={(e) => setTopK((e.target as HTMLInputElement).valueAsNumber || 3)} /></label>
        <button type="submit" id="kb-search-submit">Search</button>
      </form>
      <ErrorBox error={error} id="kb-search-error" />
      {found && found.length === 0 && <p class="muted" id="kb-search-none">Nothing found: no chunk holds a word of the question (stopwords aside).</p>}
      {found && found.length > 0 && (
        <ol class="chunks" id="kb-search-results">
          {found.map((c, i) => (
            <li key={i} data-source={c.source_id}>
              <div class="muted"><span class="score">{formatScore(c.score)}</span> · {names.get(c.source_id) ?? c.source_id}</div>
              <pre>{c.text}</pre>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

/** The service LLMs that name a base and the agents on them. */
function UsedBy({ api, id }: { api: Api; id: string }) {
  const users = useAsync(async () => {
    const [llms, agents] = await Promise.all([
      api.get<{ llm_id: string; knowledge_base_ids?: string[] }[]>('/list-service-llms'),
      api.get<{ agent_id: string; agent_name?: string | null; response_engine?: { type: string; llm_id?: string } }[]>('/list-agents'),
    ]);
    const llmIds = new Set(llms.filter((l) => l.knowledge_base_ids?.includes(id)).map((l) => l.llm_id));
    return agents.filter((a) => a.response_engine?.type === 'service_llm' && llmIds.has(a.response_engine.llm_id ?? ''));
  }, [id]);
  if (!users.data) return <Loading state={users} />;
  if (users.data.length === 0) return <p class="muted" id="kb-used-by">No agent answers from it yet: link it on an agent's page (agents on a service LLM).</p>;
  return (
    <ul id="kb-used-by">
      {users.data.map((a) => <li key={a.agent_id}><a href={`#${path('/agents', a.agent_id)}`}>{a.agent_name ?? a.agent_id}</a></li>)}
    </ul>
  );
}

/** One knowledge base: its sources (read again every second while one is in progress), more sources, search, deletes. */
export function KnowledgeBasePage({ api, id }: { api: Api; id: string }) {
  const kb = useAsync(() => api.get<KnowledgeBase>(path('/get-knowledge-base', id)), [id]);
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const ingesting = kb.data?.status === 'in_progress';
  useEffect(() => {
    if (!ingesting) return;
    const timer = setTimeout(kb.reload, POLL_INTERVAL_MS);
    return () => clearTimeout(timer);
  }, [kb.data]);

  const act = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const deleteSource = (sourceId: string) => act(async () => {
    await api.request('DELETE', `${path('/delete-knowledge-base-source', id)}/source/${encodeURIComponent(sourceId)}`);
    kb.reload();
  });
  const deleteBase = () => act(async () => {
    await api.request('DELETE', path('/delete-knowledge-base', id));
    go('/knowledge-bases');
  });

  const data = kb.data;
  return (
    <main>
      <p><a href="#/knowledge-bases">← Knowledge bases</a></p>
      {!data && <Loading state={kb} />}
      {data && <>
        <div class="row">
          <h1>{data.knowledge_base_name} <code class="id">{data.knowledge_base_id}</code></h1>
          <span class="spacer" />
          <span id="kb-status"><Badge value={data.status} /></span>
        </div>
        <ErrorBox error={error} id="kb-error" />
        <Card title="Sources" id="kb-sources">
          <div class="table-wrap"><table>
            <thead><tr><th>Source</th><th>Type</th><th>Status</th><th>Chunks</th><th /></tr></thead>
            <tbody>
              {data.knowledge_base_sources.map((s) => (
                <tr key={s.source_id} data-source={s.source_id}>
                  <td>{sourceName(s)}{s.error && <div class="error source-error">{s.error}</div>}</td>
                  <td>{s.type}</td>
                  <td><Badge value={s.status} /></td>
                  <td>{s.chunk_count}</td>
                  <td><button class="secondary" data-action="delete-source" onClick={() => void deleteSource(s.source_id)}>Delete</button></td>
                </tr>
              ))}
            </tbody>
          </table></div>
          {data.knowledge_base_sources.length === 0 && <p class="muted">No sources: add some below.</p>}
          {ingesting && <p class="muted" id="kb-ingesting">Ingesting… (this page follows it)</p>}
        </Card>
        <div class="grid2">
          <Card title="Search" id="kb-search-card">
            <p class="muted">The chunks a call would retrieve for this question, ranked as a call ranks them (scores in (0, 1], higher is better).</p>
            <SearchBox api={api} kb={data} />
          </Card>
          <Card title="Agents answering from it">
            <UsedBy api={api} id={id} />
          </Card>
        </div>
        <Card title="Add sources" id="kb-add">
          <SourcesForm idPrefix="kb-add" submitLabel="Add" withName={false} onSubmit={async (body) => {
            await api.post(path('/add-knowledge-base-sources', id), body);
            kb.reload();
          }} />
        </Card>
        <div class="row">
          {!confirming
            ? <button class="danger" id="kb-delete" onClick={() => setConfirming(true)}>Delete this knowledge base</button>
            : <>
              <span>Its sources and chunks go with it.</span>
              <button class="danger" id="kb-delete-confirm" onClick={() => void deleteBase()}>Delete</button>
              <button class="secondary" onClick={() => setConfirming(false)}>Keep</button>
            </>}
        </div>
      </>}
    </main>
  );
}

interface LlmKnowledge {
  llm_id: string;
  knowledge_base_ids?: string[];
  kb_config?: { top_k?: number; filter_score?: number };
}

/**
 * Links knowledge bases to an agent: they are its service LLM's `knowledge_base_ids` and
 * `kb_config`, saved on the LLM (so every agent on that LLM answers from them).
 */
export function KnowledgeLink({ api, engine }: { api: Api; engine: { type?: string; llm_id?: string } | undefined }) {
  const llmId = engine?.type === 'service_llm' ? engine.llm_id : undefined;
  const loaded = useAsync(async () => {
    if (!llmId) return null;
    const [llm, bases] = await Promise.all([api.get<LlmKnowledge>(path('/get-service-llm', llmId)), api.get<KnowledgeBase[]>('/list-knowledge-bases')]);
    return { llm, bases };
  }, [llmId]);
  const [ids, setIds] = useState<string[]>([]);
  const [topK, setTopK] = useState<number | undefined>(undefined);
  const [filterScore, setFilterScore] = useState<number | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    const llm = loaded.data?.llm;
    if (!llm) return;
    setIds(llm.knowledge_base_ids ?? []);
    setTopK(llm.kb_config?.top_k);
    setFilterScore(llm.kb_config?.filter_score);
  }, [loaded.data]);

  if (!llmId) {
    return <p class="muted" id="kb-link">Knowledge bases are retrieved by service-LLM agents; this agent's engine is {engine?.type ?? 'unset'}.</p>;
  }
  if (!loaded.data) return <Loading state={loaded} />;
  const save = async () => {
    setError(null);
    setSaved(false);
    const kbConfig: Record<string, number> = {};
    if (topK !== undefined && !Number.isNaN(topK)) kbConfig.top_k = topK;
    if (filterScore !== undefined && !Number.isNaN(filterScore)) kbConfig.filter_score = filterScore;
    try {
      await api.patch(path('/update-service-llm', llmId), { knowledge_base_ids: ids, kb_config: kbConfig });
      setSaved(true);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const toggle = (id: string, on: boolean) => setIds(on ? [...ids, id] : ids.filter((x) => x !== id));
  const number = (e: Event) => (e.target as HTMLInputElement).valueAsNumber;
  return (
    <div id="kb-link">
      <p class="muted">Saved on the service LLM <a href={`#${path('/llms', llmId)}`}>{llmId}</a>: every agent on it answers from these.</p>
      {loaded.data.bases.length === 0 && <p class="muted">The account has no knowledge base: <a href="#/knowledge-bases">create one</a>.</p>}
      <ul class="checks">
        {loaded.data.bases.map((b) => (
          <li key={b.knowledge_base_id}>
            <label><input type="checkbox" data-kb={b.knowledge_base_id} checked={ids.includes(b.knowledge_base_id)} onChange={(e) => toggle(b.knowledge_base_id, (e.target as HTMLInputElement).checked)} /> {b.knowledge_base_name} <Badge value={b.status} /></label>
          </li>
        ))}
      </ul>
      <div class="form">
        <label for="kb-top-k">Chunks per turn</label>
        <input id="kb-top-k" type="number" min={1} max={20} placeholder="3" value={topK ?? ''} onInput={(e) => setTopK(number(e))} />
        <label for="kb-filter-score">Least score</label>
        <input id="kb-filter-score" type="number" min={0} max={1} step={0.05} placeholder="0" value={filterScore ?? ''} onInput={(e) => setFilterScore(number(e))} />
        <span class="hint">Chunks scoring below it are left out (0 keeps every match).</span>
      </div>
      <div class="row"><button id="kb-link-save" onClick={() => void save()}>Save knowledge bases</button></div>
      <ErrorBox error={error} id="kb-link-error" />
      {saved && <div class="notice" id="kb-link-saved">Saved on {llmId}.</div>}
    </div>
  );
}
