/**
 * A test case as a form (docs/testing-agents.md): name, mode, the caller (a script of say / dtmf /
 * wait_ms / interrupt turns, or a persona and goal), the function mocks and the assertions of
 * every kind. The form edits the same object as the JSON tab and only the fields a control
 * changes: what it does not show (dynamic variables, metadata, fields added later) is kept as it
 * is, so the JSON round-trips exactly.
 */
import { useState } from 'preact/hooks';

/** The editable part of a test case (the JSON tab's object). */
export type CaseDraft = Record<string, any>;

/** One control over a value: its own text, committed while it parses (lists, JSON and numbers are typed as text). */
function ParsedInput<T>({ id, value, format, parse, placeholder, multiline, onChange }: {
  id?: string;
  value: T;
  format: (value: T) => string;
  /** The value the text stands for; throws when it stands for none (the text stays, marked invalid). */
  parse: (text: string) => T;
  placeholder?: string;
  multiline?: boolean;
  onChange: (value: T) => void;
}) {
  const [text, setText] = useState(() => format(value));
  const [bad, setBad] = useState(false);
  const onInput = (e: Event) => {
    const next = (e.target as HTMLInputElement).value;
    setText(next);
    try {
      const parsed = parse(next);
      setBad(false);
      onChange(parsed);
    } catch {
      setBad(true);
    }
  };
  const props = { id, value: text, placeholder, onInput, class: bad ? 'invalid' : '', 'aria-invalid': bad };
  return multiline ? <textarea rows={3} {...props} /> : <input {...props} />;
}

/** An optional whole number: '' is absent (undefined). */
const optionalInt = {
  format: (v: number | undefined) => (v === undefined ? '' : String(v)),
  parse: (t: string) => {
    if (t.trim() === '') return undefined;
    const n = Number(t);
    if (!Number.isInteger(n)) throw new Error('not a whole number');
    return n;
  },
};
/** Optional JSON: '' is absent. */
const optionalJson = {
  format: (v: unknown) => (v === undefined ? '' : JSON.stringify(v)),
  parse: (t: string): unknown => (t.trim() === '' ? undefined : JSON.parse(t)),
};
/** A list typed as comma-separated words. */
const commaList = {
  format: (v: string[] | undefined) => (v ?? []).join(', '),
  parse: (t: string) => t.split(',').map((s) => s.trim()).filter(Boolean),
};

/** A copy of `object` with `key` set, or removed when `value` is undefined. */
function withField<T extends Record<string, any>>(object: T, key: string, value: unknown): T {
  const copy: Record<string, any> = { ...object };
  if (value === undefined) delete copy[key];
  else copy[key] = value;
  return copy as T;
}

type FieldKind = 'text' | 'list' | 'json' | 'int' | 'bool' | 'role' | 'flags';
/** Each assertion kind's fields: name, kind, required (a new assertion starts with its required fields). */
export const ASSERTION_FIELDS: Record<string, [string, FieldKind, boolean][]> = {
  node_reached: [['node_id', 'text', true]],
  node_path: [['node_ids', 'list', true]],
  tool_called: [['name', 'text', true], ['args', 'json', false]],
  tool_not_called: [['name', 'text', true]],
  variable_equals: [['name', 'text', true], ['value', 'text', true]],
  transcript_contains: [['text', 'text', true], ['role', 'role', false]],
  transcript_matches: [['pattern', 'text', true], ['flags', 'flags', false], ['role', 'role', false]],
  call_successful: [['value', 'bool', true]],
  disconnection_reason: [['value', 'text', true]],
  max_turns: [['value', 'int', true]],
  latency_e2e_p90_below_ms: [['value', 'int', true]],
  llm_judge: [['criterion', 'text', true]],
};
const START: Record<FieldKind, unknown> = { text: '', list: [], json: {}, int: 0, bool: true, role: undefined, flags: undefined };

/** A new assertion of `type` with its required fields at their starting values. */
function newAssertion(type: string): Record<string, unknown> {
  let assertion: Record<string, unknown> = { type };
  for (const [name, kind, required] of ASSERTION_FIELDS[type] ?? []) if (required) assertion = withField(assertion, name, START[kind]);
  return assertion;
}

function AssertionField({ id, kind, value, onChange }: { id: string; kind: FieldKind; value: any; onChange: (v: unknown) => void }) {
  switch (kind) {
    case 'bool':
      return <select id={id} value={String(value)} onChange={(e) => onChange((e.target as HTMLSelectElement).value === 'true')}><option value="true">true</option><option value="false">false</option></select>;
    case 'role':
      return (
        <select id={id} value={value ?? ''} onChange={(e) => onChange((e.target as HTMLSelectElement).value || undefined)}>
          <option value="">either side</option><option value="agent">agent</option><option value="user">user</option>
        </select>
      );
    case 'list':
      return <ParsedInput id={id} value={value} {...commaList} placeholder="greet, book" onChange={onChange} />;
    case 'json':
      return <ParsedInput id={id} value={value} {...optionalJson} placeholder='{"order_id": "123"} (optional)' onChange={onChange} />;
    case 'int':
      return <ParsedInput id={id} value={value} {...optionalInt} onChange={(v) => onChange(v ?? 0)} />;
    case 'flags':
      return <input id={id} value={value ?? ''} placeholder="i (optional)" maxLength={4} onInput={(e) => onChange((e.target as HTMLInputElement).value || undefined)} />;
    default:
      return <input id={id} value={value ?? ''} onInput={(e) => onChange((e.target as HTMLInputElement).value)} />;
  }
}

const TURN_KINDS = ['say', 'dtmf', 'wait_ms', 'interrupt'] as const;
const turnKind = (turn: Record<string, unknown>) => TURN_KINDS.find((k) => k in turn) ?? 'say';
const newTurn = (kind: string): Record<string, unknown> => (kind === 'wait_ms' ? { wait_ms: 500 } : { [kind]: '' });

/** A list editor's buttons: remove this row. */
function Remove({ onClick, what }: { onClick: () => void; what: string }) {
  return <button type="button" class="secondary" data-action={`remove-${what}`} onClick={onClick}>Remove</button>;
}

/** The caller's script, turn by turn. */
function ScriptEditor({ script, onChange }: { script: Record<string, unknown>[]; onChange: (next: Record<string, unknown>[]) => void }) {
  const put = (i: number, turn: Record<string, unknown>) => onChange(script.map((t, j) => (j === i ? turn : t)));
  return (
    <ol class="rows" id="case-script">
      {script.map((turn, i) => {
        const kind = turnKind(turn);
        return (
          <li key={`${i}-${kind}`} class="row" data-turn={i}>
            <select id={`turn-${i}-kind`} data-field="kind" value={kind} onChange={(e) => put(i, newTurn((e.target as HTMLSelectElement).value))}>
              {TURN_KINDS.map((k) => <option key={k} value={k}>{k}</option>)}
            </select>
            {kind === 'wait_ms'
              ? <ParsedInput id={`turn-${i}-text`} value={turn.wait_ms as number} {...optionalInt} onChange={(v) => put(i, { ...turn, wait_ms: v ?? 0 })} />
              : <input id={`turn-${i}-text`} data-field="text" value={(turn[kind] as string | undefined) ?? ''} placeholder={kind === 'dtmf' ? '12#' : 'what the caller says'} onInput={(e) => put(i, { ...turn, [kind]: (e.target as HTMLInputElement).value })} />}
            {kind === 'interrupt' && (
              <label>after words <ParsedInput value={turn.after_words as number | undefined} {...optionalInt} placeholder="2" onChange={(v) => put(i, withField(turn, 'after_words', v))} /></label>
            )}
            <Remove what="turn" onClick={() => onChange(script.filter((_, j) => j !== i))} />
          </li>
        );
      })}
      <li><button type="button" class="secondary" id="case-add-turn" onClick={() => onChange([...script, newTurn('say')])}>Add a turn</button></li>
    </ol>
  );
}

/** The function mocks: name -> response (JSON), status, delay. */
function MocksEditor({ mocks, onChange }: { mocks: Record<string, Record<string, unknown>>; onChange: (next: Record<string, Record<string, unknown>>) => void }) {
  const entries = Object.entries(mocks);
  const rename = (from: string, to: string) => onChange(Object.fromEntries(entries.map(([k, v]) => (k === from ? [to, v] : [k, v]))));
  const put = (name: string, mock: Record<string, unknown>) => onChange({ ...mocks, [name]: mock });
  return (
    <ol class="rows" id="case-mocks">
      {entries.map(([name, mock], i) => (
        <li key={i} class="row" data-mock={i}>
          <input id={`mock-${i}-name`} data-field="name" value={name} placeholder="function name" onInput={(e) => rename(name, (e.target as HTMLInputElement).value)} />
          <ParsedInput id={`mock-${i}-response`} value={mock.response} {...optionalJson} placeholder='response {"ok": true}' onChange={(v) => put(name, withField(mock, 'response', v))} />
          <label>status <ParsedInput id={`mock-${i}-status`} value={mock.status as number | undefined} {...optionalInt} placeholder="200" onChange={(v) => put(name, withField(mock, 'status', v))} /></label>
          <label>delay ms <ParsedInput id={`mock-${i}-delay`} value={mock.delay_ms as number | undefined} {...optionalInt} placeholder="0" onChange={(v) => put(name, withField(mock, 'delay_ms', v))} /></label>
          <Remove what="mock" onClick={() => onChange(Object.fromEntries(entries.filter(([k]) => k !== name)))} />
        </li>
      ))}
      <li><button type="button" class="secondary" id="case-add-mock" onClick={() => {
        let n = entries.length + 1;
        while (`function_${n}` in mocks) n++;
        put(`function_${n}`, {});
      }}>Add a mock</button></li>
    </ol>
  );
}

/** The assertions, each with the fields of its kind. */
function AssertionsEditor({ assertions, onChange }: { assertions: Record<string, any>[]; onChange: (next: Record<string, any>[]) => void }) {
  const put = (i: number, assertion: Record<string, any>) => onChange(assertions.map((a, j) => (j === i ? assertion : a)));
  return (
    <ol class="rows" id="case-assertions">
      {assertions.map((assertion, i) => (
        <li key={`${i}-${assertion.type}`} class="row" data-assertion={i}>
          <select id={`assertion-${i}-type`} data-field="type" value={assertion.type} onChange={(e) => put(i, newAssertion((e.target as HTMLSelectElement).value))}>
            {Object.keys(ASSERTION_FIELDS).map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
          {(ASSERTION_FIELDS[assertion.type] ?? []).map(([name, kind]) => (
            <label key={name}>{name} <AssertionField id={`assertion-${i}-${name}`} kind={kind} value={assertion[name]} onChange={(v) => put(i, withField(assertion, name, v))} /></label>
          ))}
          <Remove what="assertion" onClick={() => onChange(assertions.filter((_, j) => j !== i))} />
        </li>
      ))}
      <li><button type="button" class="secondary" id="case-add-assertion" onClick={() => onChange([...assertions, newAssertion('node_reached')])}>Add an assertion</button></li>
    </ol>
  );
}

/** The test case form; `onChange` receives the whole draft with the field changed. */
export function TestCaseForm({ draft, onChange }: { draft: CaseDraft; onChange: (next: CaseDraft) => void }) {
  const set = (field: string, value: unknown) => onChange(withField(draft, field, value));
  const caller = (draft.caller ?? { script: [] }) as Record<string, any>;
  const persona = 'persona' in caller;
  return (
    <div class="form" id="case-form">
      <label for="case-name">Name</label>
      <input id="case-name" value={draft.name ?? ''} maxLength={256} placeholder="Test case" onInput={(e) => set('name', (e.target as HTMLInputElement).value || undefined)} />

      <label for="case-mode">Mode</label>
      <select id="case-mode" value={draft.mode ?? 'text'} onChange={(e) => set('mode', (e.target as HTMLSelectElement).value)}>
        <option value="text">text (no recogniser or synthesiser)</option>
        <option value="audio">audio (spoken through the whole pipeline)</option>
      </select>

      <label for="case-agent-version">Agent version</label>
      <ParsedInput id="case-agent-version" value={draft.agent_version as number | undefined} {...optionalInt} placeholder="latest" onChange={(v) => set('agent_version', v)} />

      <label for="case-caller-kind">Caller</label>
      <select id="case-caller-kind" value={persona ? 'persona' : 'script'} onChange={(e) => set('caller', (e.target as HTMLSelectElement).value === 'persona' ? { persona: '', goal: '' } : { script: [] })}>
        <option value="script">a script of turns</option>
        <option value="persona">a persona and goal (played by the configured LLM)</option>
      </select>
      {persona ? <>
        <label for="case-persona">Persona</label>
        <textarea id="case-persona" rows={2} value={caller.persona} onInput={(e) => set('caller', { ...caller, persona: (e.target as HTMLTextAreaElement).value })} />
        <label for="case-goal">Goal</label>
        <textarea id="case-goal" rows={2} value={caller.goal} onInput={(e) => set('caller', { ...caller, goal: (e.target as HTMLTextAreaElement).value })} />
        <label for="case-max-turns">Max turns</label>
        <ParsedInput id="case-max-turns" value={caller.max_turns as number | undefined} {...optionalInt} placeholder="12" onChange={(v) => set('caller', withField(caller, 'max_turns', v))} />
      </> : <>
        <span>Script</span>
        <ScriptEditor script={(caller.script ?? []) as Record<string, unknown>[]} onChange={(script) => set('caller', { ...caller, script })} />
      </>}

      <span>Function mocks</span>
      <MocksEditor mocks={(draft.tool_mocks ?? {}) as Record<string, Record<string, unknown>>} onChange={(m) => set('tool_mocks', Object.keys(m).length === 0 && draft.tool_mocks === undefined ? undefined : m)} />
      <label for="case-allow-unmocked">Unmocked functions</label>
      <select id="case-allow-unmocked" value={draft.allow_unmocked_functions ? 'allow' : 'refuse'} onChange={(e) => set('allow_unmocked_functions', (e.target as HTMLSelectElement).value === 'allow' ? true : draft.allow_unmocked_functions === undefined ? undefined : false)}>
        <option value="refuse">refused (the engine sees an error)</option>
        <option value="allow">allowed (they reach the backend)</option>
      </select>

      <span>Assertions</span>
      <AssertionsEditor assertions={(draft.assertions ?? []) as Record<string, any>[]} onChange={(a) => set('assertions', a)} />
    </div>
  );
}
