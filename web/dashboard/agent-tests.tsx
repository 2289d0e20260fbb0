/**
 * An agent's Tests tab (docs/testing-agents.md): its test cases, each edited as a form with the
 * JSON one tab away; "Run all" on a version of the agent; a run's results (each case's pass or
 * fail, the first failing assertion highlighted with what was expected and what happened, the
 * transcript, the node path), read again every second while the run is running; and the
 * history of the agent's runs per version. Loaded on first use (a separate chunk of the bundle).
 */
import { useEffect, useState } from 'preact/hooks';
import { formatTime } from '../shared/call-views.tsx';
import type { Api } from './api.ts';
import { jsonError } from './agent-form.tsx';
import { type CaseDraft, TestCaseForm } from './test-case-form.tsx';
import { Badge, Card, ErrorBox, Json, Loading, messageOf, useAsync } from './ui.tsx';

interface TestCase extends CaseDraft {
  test_case_id: string;
  name: string;
  mode: string;
  assertions: Record<string, unknown>[];
}

interface AssertionResult {
  type: string;
  passed: boolean;
  skipped?: boolean;
  expected: unknown;
  actual: unknown;
  detail?: string;
}

interface CaseResult {
  test_case_id: string;
  name: string;
  agent_version: number;
  passed: boolean;
  error: string | null;
  assertions: AssertionResult[];
  transcript: { role: string; content: string; cut_off?: boolean; dtmf?: boolean }[];
  node_path: string[];
  duration_ms: number;
}

interface TestRun {
  test_run_id: string;
  agent_version: number | null;
  status: 'running' | 'complete';
  passed: number;
  failed: number;
  results: CaseResult[];
  created_at: number;
}

/** How often a running test run is read again. */
const POLL_INTERVAL_MS = 1_000;
/** Fields the server sets, left out of the editable case. */
const READ_ONLY = ['test_case_id', 'created_at', 'last_modification_timestamp'];
const enc = encodeURIComponent;

/** A new case's starting point: one turn, one assertion. */
function template(agentId: string): CaseDraft {
  return { name: 'New test case', agent_id: agentId, mode: 'text', caller: { script: [{ say: 'hello' }] }, assertions: [{ type: 'call_successful', value: true }] };
}

function editable(testCase: TestCase): CaseDraft {
  return Object.fromEntries(Object.entries(testCase).filter(([k]) => !READ_ONLY.includes(k)));
}

/** One case's editor: the form or its JSON; Save creates or updates it. */
function CaseEditor({ api, agentId, testCase, onSaved, onClose }: {
  api: Api;
  agentId: string;
  testCase: TestCase | null;
  onSaved: (saved: TestCase) => void;
  onClose: () => void;
}) {
  const [draft, setDraft] = useState<CaseDraft>(() => (testCase ? editable(testCase) : template(agentId)));
  const [mode, setMode] = useState<'form' | 'json'>('form');
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);

  const switchTo = (next: 'form' | 'json') => {
    if (next === mode) return;
    if (next === 'json') setText(JSON.stringify(draft, null, 2));
    else {
      const problem = jsonError(text);
      if (problem) return setError(problem);
      setDraft(JSON.parse(text) as CaseDraft);
    }
    setError(null);
    setMode(next);
  };

  const save = async () => {
    setError(null);
    setSaved(false);
    let body = draft;
    if (mode === 'json') {
      const problem = jsonError(text);
      if (problem) return setError(problem);
      body = JSON.parse(text) as CaseDraft;
    }
    try {
      const result = testCase
        ? await api.patch<TestCase>(`/update-test-case/${enc(testCase.test_case_id)}`, Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'agent_id')))
        : await api.post<TestCase>('/create-test-case', body);
      setSaved(true);
      onSaved(result);
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <Card title={testCase ? `Edit: ${testCase.name}` : 'New test case'} id="case-editor">
      <div class="tabs" role="tablist">
        <button type="button" id="case-tab-form" class={mode === 'form' ? 'active' : ''} onClick={() => switchTo('form')}>Form</button>
        <button type="button" id="case-tab-json" class={mode === 'json' ? 'active' : ''} onClick={() => switchTo('json')}>JSON</button>
      </div>
      {mode === 'form'
        ? <TestCaseForm draft={draft} onChange={setDraft} />
        : <textarea class="json" id="case-json" spellcheck={false} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />}
      <div class="row">
        <button id="case-save" onClick={() => void save()}>{testCase ? 'Save' : 'Create'}</button>
        <button class="secondary" id="case-close" onClick={onClose}>Close</button>
      </div>
      <ErrorBox error={error} id="case-error" />
      {saved && <div class="notice" id="case-saved">Saved.</div>}
    </Card>
  );
}

/** The first assertion that failed (skipped ones never fail), or -1. */
export function firstFailure(assertions: AssertionResult[]): number {
  return assertions.findIndex((a) => !a.passed && !a.skipped);
}

/** One case's result: pass or fail, its assertions (the first failure highlighted), transcript and node path. */
function CaseResultView({ result }: { result: CaseResult }) {
  const first = firstFailure(result.assertions);
  return (
    <details class="case-result" data-case={result.test_case_id} open={!result.passed}>
      <summary><Badge value={result.passed ? 'passed' : 'failed'} /> {result.name} <span class="muted">v{result.agent_version} · {result.duration_ms} ms</span></summary>
      {result.error && <ErrorBox error={result.error} />}
      <ol class="assertions">
        {result.assertions.map((a, i) => (
          <li key={i} class={i === first ? 'first-failure' : a.passed ? 'pass' : a.skipped ? 'skipped' : 'fail'} data-assertion={i}>
            <Badge value={a.skipped ? 'skipped' : a.passed ? 'passed' : 'failed'} /> <code>{a.type}</code>
            {a.detail && <span class="muted"> {a.detail}</span>}
            {(i === first || (!a.passed && !a.skipped)) && (
              <div class="expected-actual">
                <div><span class="muted">expected</span><Json value={a.expected} /></div>
                <div><span class="muted">actual</span><Json value={a.actual} /></div>
              </div>
            )}
          </li>
        ))}
      </ol>
      {result.node_path.length > 0 && <ol class="node-path">{result.node_path.map((n, i) => <li key={i}>{n}</li>)}</ol>}
      <ul class="transcript">
        {result.transcript.map((line, i) => (
          <li key={i} class={`${line.role}${line.cut_off ? ' cut' : ''}`}><span class="who">{line.role}</span> {line.dtmf ? `keys ${line.content}` : line.content}</li>
        ))}
      </ul>
    </details>
  );
}

/** A run's results, read again while it is running. */
function RunView({ api, runId, onComplete }: { api: Api; runId: string; onComplete: () => void }) {
  const run = useAsync(() => api.get<TestRun>(`/get-test-run/${enc(runId)}`), [runId]);
  useEffect(() => {
    if (run.data?.status === 'complete') onComplete(); // the history shows it finished
    if (run.data?.status !== 'running') return;
    const timer = setTimeout(run.reload, POLL_INTERVAL_MS);
    return () => clearTimeout(timer);
  }, [run.data]);
  if (!run.data) return <Loading state={run} />;
  const data = run.data;
  return (
    <div id="run-results" data-run={data.test_run_id} data-status={data.status}>
      <p><Badge value={data.status} /> {data.passed} passed, {data.failed} failed{data.agent_version !== null && <> · version {data.agent_version}</>}</p>
      {data.results.map((r) => <CaseResultView key={r.test_case_id} result={r} />)}
    </div>
  );
}

/** The Tests tab of an agent. */
export function AgentTests({ api, agentId, versions }: { api: Api; agentId: string; versions: number[] }) {
  const cases = useAsync(() => api.get<TestCase[]>(`/list-test-cases?agent_id=${enc(agentId)}`), [agentId]);
  const runs = useAsync(() => api.get<TestRun[]>(`/list-test-runs?agent_id=${enc(agentId)}`), [agentId]);
  const [editing, setEditing] = useState<TestCase | 'new' | null>(null);
  // One editor per New or Edit pressed: saving a new case keeps its editor (and its "Saved.").
  const [session, setSession] = useState(0);
  const edit = (what: TestCase | 'new') => {
    setEditing(what);
    setSession((n) => n + 1);
  };
  const [runId, setRunId] = useState<string | null>(null);
  const latest = versions.at(-1);
  const [version, setVersion] = useState<number | undefined>(latest);
  useEffect(() => setVersion(latest), [latest]);
  const [error, setError] = useState<string | null>(null);

  const act = async (action: () => Promise<void>) => {
    setError(null);
    try {
      await action();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const runAll = () => act(async () => {
    const started = await api.post<{ test_run_id: string }>('/create-test-run', version === undefined ? { agent_id: agentId } : { agent_id: agentId, agent_version: version });
    setRunId(started.test_run_id);
    runs.reload();
  });
  const remove = (testCase: TestCase) => act(async () => {
    await api.request('DELETE', `/delete-test-case/${enc(testCase.test_case_id)}`);
    if (editing !== 'new' && editing?.test_case_id === testCase.test_case_id) setEditing(null);
    cases.reload();
  });

  // The history, newest first, grouped by the version each run played.
  const byVersion = new Map<string, TestRun[]>();
  for (const run of runs.data ?? []) {
    const key = run.agent_version === null ? 'each case\'s version' : `version ${run.agent_version}`;
    byVersion.set(key, [...(byVersion.get(key) ?? []), run]);
  }

  return (
    <div id="agent-tests">
      <ErrorBox error={error} id="tests-error" />
      <Card title="Test cases" id="test-cases">
        <Loading state={cases} />
        {cases.data && cases.data.length === 0 && <p class="muted" id="test-cases-empty">No test cases yet: simulated calls with assertions, played offline on the embedded engines.</p>}
        {cases.data && cases.data.length > 0 && (
          <div class="table-wrap"><table>
            <thead><tr><th>Name</th><th>Mode</th><th>Assertions</th><th /></tr></thead>
            <tbody>
              {cases.data.map((c) => (
                <tr key={c.test_case_id} data-case={c.test_case_id}>
                  <td>{c.name}</td><td>{c.mode}</td><td>{c.assertions.length}</td>
                  <td class="actions">
                    <button class="secondary" data-action="edit-case" onClick={() => edit(c)}>Edit</button>
                    <button class="secondary" data-action="delete-case" onClick={() => void remove(c)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table></div>
        )}
        <div class="row">
          <button class="secondary" id="new-case" onClick={() => edit('new')}>New test case</button>
          <span class="spacer" />
          <label>on <select id="run-version" value={version ?? ''} onChange={(e) => setVersion(Number((e.target as HTMLSelectElement).value))}>
            {[...versions].reverse().map((v) => <option key={v} value={v}>v{v}{v === latest ? ' (latest)' : ''}</option>)}
          </select></label>
          <button id="run-all" disabled={!cases.data?.length} onClick={() => void runAll()}>Run all</button>
        </div>
      </Card>
      {editing && (
        <CaseEditor
          key={session}
          api={api}
          agentId={agentId}
          testCase={editing === 'new' ? null : editing}
          onSaved={(saved) => {
            setEditing(saved);
            cases.reload();
          }}
          onClose={() => setEditing(null)}
        />
      )}
      {runId && <Card title="Results" id="run-card"><RunView key={runId} api={api} runId={runId} onComplete={runs.reload} /></Card>}
      <Card title="Runs by version" id="test-runs">
        <Loading state={runs} />
        {runs.data && runs.data.length === 0 && <p class="muted">No runs yet.</p>}
        {[...byVersion].map(([label, list]) => (
          <div key={label} data-version={label}>
            <h3>{label}</h3>
            <div class="table-wrap"><table>
              <thead><tr><th>Started</th><th>Status</th><th>Passed</th><th>Failed</th></tr></thead>
              <tbody>
                {list.map((r) => (
                  <tr key={r.test_run_id} class="clickable" data-run={r.test_run_id} onClick={() => setRunId(r.test_run_id)}>
                    <td>{formatTime(r.created_at)}</td><td><Badge value={r.status} /></td><td>{r.passed}</td><td>{r.failed}</td>
                  </tr>
                ))}
              </tbody>
            </table></div>
          </div>
        ))}
      </Card>
    </div>
  );
}
