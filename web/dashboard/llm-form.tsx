/**
 * A service LLM as a form: model, temperature, who speaks first, the prompt and the begin message,
 * the tools of every state (custom functions, transfer_call, press_digit, end_call), the states
 * with their prompts, edges and tools, and the knowledge bases with kb_config. Like the agent form
 * it edits the JSON editor's object and changes only the fields it shows, so form -> JSON -> form
 * is exact; a function's parameters and headers are edited as JSON in its row.
 */
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { AgentDraft } from './agent-settings.ts';
import { useAsync } from './ui.tsx';

type Obj = Record<string, unknown>;
const TOOL_TYPES = ['custom', 'end_call', 'transfer_call', 'press_digit'] as const;

/** The draft with `key` set, or removed when `value` is undefined. */
function withField<T extends Obj>(object: T, key: string, value: unknown): T {
  const next: Obj = { ...object };
  if (value === undefined) delete next[key];
  else next[key] = value;
  return next as T;
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const text = (e: Event) => (e.target as HTMLInputElement | HTMLTextAreaElement).value;

/** A new tool of a type, with what its schema requires. */
function newTool(type: string, index: number): Obj {
  if (type === 'custom') return { type, name: `function_${index + 1}`, url: 'https://example.com/functions' };
  if (type === 'transfer_call') return { type, name: 'transfer_call', transfer_destination: { type: 'predefined', number: '+15550100' } };
  return { type, name: type };
}

/** A JSON object field of a tool (parameters, headers): the tool changes only when the text parses. */
function ObjectJson({ id, value, onChange }: { id: string; value: unknown; onChange: (v: Obj | undefined) => void }) {
  const [draft, setDraft] = useState(value === undefined ? '' : JSON.stringify(value));
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <>
      <textarea id={id} rows={2} spellcheck={false} value={draft} placeholder='{"type": "object", "properties": {}}' onInput={(e) => {
        const t = text(e);
        setDraft(t);
        if (t.trim() === '') {
          setProblem(null);
          return onChange(undefined);
        }
        try {
          const parsed: unknown = JSON.parse(t);
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('an object is expected');
          setProblem(null);
          onChange(parsed as Obj);
        } catch (error) {
          setProblem(`Not saved until it is a JSON object: ${error instanceof Error ? error.message : String(error)}`);
        }
      }} />
      {problem && <span class="field-error">{problem}</span>}
    </>
  );
}

/** A list of tools (`general_tools` or a state's `tools`). */
function ToolsEditor({ id, tools, onChange }: { id: string; tools: Obj[]; onChange: (tools: Obj[] | undefined) => void }) {
  const [adding, setAdding] = useState<string>('custom');
  const set = (i: number, tool: Obj) => onChange(tools.map((t, j) => (j === i ? tool : t)));
  return (
    <div class="setting-rows" id={id}>
      {tools.map((tool, i) => {
        const type = str(tool.type);
        const dest = (tool.transfer_destination ?? {}) as Obj;
        return (
          <div class="setting-row" key={i} data-tool={i}>
            <label><span class="muted">Type</span><input value={type} disabled /></label>
            <label><span class="muted">Name</span><input data-field="name" value={str(tool.name)} maxLength={64} onInput={(e) => set(i, withField(tool, 'name', text(e)))} /></label>
            <label><span class="muted">Description</span><input data-field="description" value={str(tool.description)} maxLength={4096} onInput={(e) => set(i, withField(tool, 'description', text(e) || undefined))} /></label>
            {type === 'custom' && <>
              <label><span class="muted">URL</span><input data-field="url" type="url" value={str(tool.url)} onInput={(e) => set(i, withField(tool, 'url', text(e)))} /></label>
              <label><span class="muted">Parameters (JSON Schema)</span><ObjectJson id={`${id}-${i}-parameters`} value={tool.parameters} onChange={(v) => set(i, withField(tool, 'parameters', v))} /></label>
              <label><span class="muted">Timeout (ms)</span><input data-field="timeout_ms" type="number" min={100} max={120_000} step={100} value={typeof tool.timeout_ms === 'number' ? tool.timeout_ms : ''} placeholder="10000"
                onInput={(e) => set(i, withField(tool, 'timeout_ms', text(e) === '' ? undefined : Math.round(Number(text(e)))))} /></label>
            </>}
            {type === 'transfer_call' && (
              <label><span class="muted">Transfer to (E.164 or SIP URI)</span><input data-field="number" value={str(dest.number)} onInput={(e) => set(i, withField(tool, 'transfer_destination', { ...dest, type: 'predefined', number: text(e) }))} /></label>
            )}
            <button type="button" class="secondary" data-action="remove-tool" onClick={() => onChange(tools.length > 1 ? tools.filter((_, j) => j !== i) : undefined)}>Remove</button>
          </div>
        );
      })}
      <div class="row">
        <select aria-label="Tool type" data-action="tool-type" value={adding} onChange={(e) => setAdding((e.target as HTMLSelectElement).value)}>
          {TOOL_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <button type="button" class="secondary" data-action="add-tool" onClick={() => onChange([...tools, newTool(adding, tools.length)])}>Add tool</button>
      </div>
    </div>
  );
}

/** The states: each one's name, prompt, edges and tools. */
function StatesEditor({ states, onChange }: { states: Obj[]; onChange: (states: Obj[] | undefined) => void }) {
  const set = (i: number, state: Obj) => onChange(states.map((s, j) => (j === i ? state : s)));
  return (
    <div class="setting-rows" id="llm-states">
      {states.map((state, i) => {
        const edges = Array.isArray(state.edges) ? (state.edges as Obj[]) : [];
        return (
          <div class="llm-state" key={i} data-state={i}>
            <div class="setting-row">
              <label><span class="muted">State name</span><input data-field="name" value={str(state.name)} maxLength={64} onInput={(e) => set(i, withField(state, 'name', text(e)))} /></label>
              <button type="button" class="secondary" data-action="remove-state" onClick={() => onChange(states.length > 1 ? states.filter((_, j) => j !== i) : undefined)}>Remove state</button>
            </div>
            <label class="stacked"><span class="muted">State prompt</span><textarea data-field="state_prompt" rows={3} value={str(state.state_prompt)} onInput={(e) => set(i, withField(state, 'state_prompt', text(e) || undefined))} /></label>
            {edges.map((edge, k) => (
              <div class="setting-row" key={k} data-edge={k}>
                <label><span class="muted">Goes to</span><input data-field="destination_state_name" value={str(edge.destination_state_name)} onInput={(e) => set(i, withField(state, 'edges', edges.map((x, m) => (m === k ? withField(x, 'destination_state_name', text(e)) : x))))} /></label>
                <label><span class="muted">When</span><input data-field="edge_description" value={str(edge.description)} onInput={(e) => set(i, withField(state, 'edges', edges.map((x, m) => (m === k ? withField(x, 'description', text(e) || undefined) : x))))} /></label>
                <button type="button" class="secondary" onClick={() => set(i, withField(state, 'edges', edges.length > 1 ? edges.filter((_, m) => m !== k) : undefined))}>Remove edge</button>
              </div>
            ))}
            <button type="button" class="secondary" data-action="add-edge" onClick={() => set(i, withField(state, 'edges', [...edges, { destination_state_name: str(states[(i + 1) % states.length]?.name) || 'next' }]))}>Add edge</button>
            <span class="muted">Tools in this state only</span>
            <ToolsEditor id={`llm-state-${i}-tools`} tools={Array.isArray(state.tools) ? (state.tools as Obj[]) : []} onChange={(t) => set(i, withField(state, 'tools', t))} />
          </div>
        );
      })}
      <button type="button" class="secondary" id="llm-add-state" onClick={() => onChange([...states, { name: `state_${states.length + 1}` }])}>Add state</button>
    </div>
  );
}

/** The LLM fields this form shows, as the API's messages name them. */
const LLM_FIELDS = ['model', 'model_temperature', 'start_speaker', 'general_prompt', 'begin_message', 'general_tools', 'states', 'starting_state', 'knowledge_base_ids', 'kb_config'];

/** The field an API refusal names: `body/<field>`, a field's name, or a state (`state "greeting" has ...`). */
export function llmFieldOfError(message: string): string | null {
  const path = /\bbody\/([a-z_]+)/.exec(message)?.[1];
  if (path) return path;
  const named = LLM_FIELDS.find((f) => new RegExp(`\\b${f}\\b`).test(message));
  if (named) return named;
  return /^state\b/.test(message) || /\bstates?\b/.test(message) ? 'states' : null;
}

/** The service-LLM form; `onChange` receives the whole draft. `error` is the API's last refusal, shown on its field. */
export function LlmForm({ api, draft, onChange, error = null }: { api: Api; draft: AgentDraft; onChange: (next: AgentDraft) => void; error?: string | null }) {
  const set = (key: string, value: unknown) => onChange(withField(draft, key, value));
  const bad = error ? llmFieldOfError(error) : null;
  const fieldError = (key: string) => (bad === key && error ? <span class="field-error" id={`llm-${key}-error`} role="alert">{error}</span> : null);
  const bases = useAsync(() => api.get<{ knowledge_base_id: string; knowledge_base_name: string }[]>('/list-knowledge-bases'), []);
  const linked = Array.isArray(draft.knowledge_base_ids) ? (draft.knowledge_base_ids as string[]) : [];
  const kb = (draft.kb_config ?? {}) as Obj;
  const states = Array.isArray(draft.states) ? (draft.states as Obj[]) : [];
  return (
    <div id="llm-form">
      <fieldset class="setting-group"><legend>Model</legend><div class="form">
        <label for="llm-model">Model</label>
        <input id="llm-model" value={str(draft.model)} maxLength={128} placeholder="the server's LLM_MODEL" onInput={(e) => set('model', text(e) || undefined)} />
        <span class="hint">A model name of the configured LLM provider; empty for the server's default.</span>
        {fieldError('model')}
        <label for="llm-temperature">Temperature</label>
        <input id="llm-temperature" type="number" min={0} max={2} step={0.1} value={typeof draft.model_temperature === 'number' ? draft.model_temperature : ''} placeholder="provider default"
          onInput={(e) => set('model_temperature', text(e) === '' ? undefined : Number(text(e)))} />
        <span class="hint">0 (the same answer every time) to 2 (varied).</span>
        {fieldError('model_temperature')}
        <label for="llm-start-speaker">Speaks first</label>
        <select id="llm-start-speaker" value={str(draft.start_speaker)} onChange={(e) => set('start_speaker', (e.target as HTMLSelectElement).value || undefined)}>
          <option value="">(default: agent)</option><option value="agent">agent</option><option value="user">user</option>
        </select>
      </div></fieldset>
      <fieldset class="setting-group"><legend>Prompt</legend><div class="form">
        <label for="llm-prompt">General prompt</label>
        <textarea id="llm-prompt" rows={6} value={str(draft.general_prompt)} onInput={(e) => set('general_prompt', text(e) || undefined)} />
        {fieldError('general_prompt')}
        <label for="llm-begin-message">Begin message</label>
        <textarea id="llm-begin-message" rows={2} value={str(draft.begin_message)} placeholder="(the model opens)" onInput={(e) => set('begin_message', text(e) || undefined)} />
        <span class="hint">What the agent says first, as written; empty: the model writes the opening.</span>
        {fieldError('begin_message')}
      </div></fieldset>
      <fieldset class="setting-group"><legend>Tools (every state)</legend>
        <ToolsEditor id="llm-general-tools" tools={Array.isArray(draft.general_tools) ? (draft.general_tools as Obj[]) : []} onChange={(t) => set('general_tools', t)} />
        <span class="hint">Custom functions call your URL (docs/custom-functions.md); transfer_call and press_digit act on phone calls; end_call names the hang-up tool.</span>
        {bad === 'general_tools' && error && <span class="field-error" id="llm-general_tools-error" role="alert">{error}</span>}
      </fieldset>
      <fieldset class="setting-group"><legend>States</legend>
        <StatesEditor states={states} onChange={(s) => set('states', s)} />
        {states.length > 0 && (
          <div class="form">
            <label for="llm-starting-state">Starting state</label>
            <select id="llm-starting-state" value={str(draft.starting_state)} onChange={(e) => set('starting_state', (e.target as HTMLSelectElement).value || undefined)}>
              <option value="">(the first)</option>
              {states.map((s) => <option key={str(s.name)} value={str(s.name)}>{str(s.name)}</option>)}
            </select>
          </div>
        )}
        {(bad === 'states' || bad === 'starting_state') && error && <span class="field-error" id="llm-states-error" role="alert">{error}</span>}
      </fieldset>
      <fieldset class="setting-group"><legend>Knowledge</legend><div class="form">
        <span>Knowledge bases</span>
        <div class="checks" id="llm-knowledge-bases">
          {bases.error && <span class="hint">Could not list the knowledge bases: {bases.error}</span>}
          {bases.data?.length === 0 && <span class="muted">None yet.</span>}
          {bases.data?.map((b) => (
            <label key={b.knowledge_base_id}><input type="checkbox" data-value={b.knowledge_base_id} checked={linked.includes(b.knowledge_base_id)} onChange={(e) => {
              const next = (e.target as HTMLInputElement).checked ? [...linked, b.knowledge_base_id] : linked.filter((id) => id !== b.knowledge_base_id);
              set('knowledge_base_ids', next.length > 0 ? next : undefined);
            }} /> {b.knowledge_base_name}</label>
          ))}
        </div>
        <label for="llm-top-k">Chunks per turn</label>
        <input id="llm-top-k" type="number" min={1} max={20} step={1} value={typeof kb.top_k === 'number' ? kb.top_k : ''} placeholder="3" onInput={(e) => {
          const next = withField(kb, 'top_k', text(e) === '' ? undefined : Math.round(Number(text(e))));
          set('kb_config', Object.keys(next).length > 0 ? next : undefined);
        }} />
        <label for="llm-filter-score">Least score</label>
        <input id="llm-filter-score" type="number" min={0} max={1} step={0.05} value={typeof kb.filter_score === 'number' ? kb.filter_score : ''} placeholder="0" onInput={(e) => {
          const next = withField(kb, 'filter_score', text(e) === '' ? undefined : Number(text(e)));
          set('kb_config', Object.keys(next).length > 0 ? next : undefined);
        }} />
        <span class="hint">Chunks scoring below this (0 to 1) are left out.</span>
        {(bad === 'knowledge_base_ids' || bad === 'kb_config') && error && <span class="field-error" id="llm-knowledge-error" role="alert">{error}</span>}
      </div></fieldset>
    </div>
  );
}
