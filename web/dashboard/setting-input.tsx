/**
 * One agent setting's editor, from its entry in agent-settings.ts: a number in its shown unit, a
 * text, a checkbox, a choice, ticks, a list (one a line), rows of an object array, or JSON. It
 * reads and writes the draft at the setting's key (a dotted key edits one member of an object).
 * A cleared field takes the API's default back; one without a default is left out (the saved value stays).
 */
import { useState } from 'preact/hooks';
import { type AgentDraft, type Setting, type SettingKind, plainText, settingId } from './agent-settings.ts';

/** The value at a setting's key (undefined when absent). */
export function readSetting(draft: AgentDraft, key: string): unknown {
  const [top, member] = key.split('.') as [string, string | undefined];
  if (!member) return draft[top];
  const parent = draft[top];
  return parent && typeof parent === 'object' ? (parent as Record<string, unknown>)[member] : undefined;
}

/** The draft with the value at a setting's key; undefined removes it (an object left empty becomes null). */
export function writeSetting(draft: AgentDraft, key: string, value: unknown): AgentDraft {
  const [top, member] = key.split('.') as [string, string | undefined];
  const next: AgentDraft = { ...draft };
  if (!member) {
    if (value === undefined) delete next[top];
    else next[top] = value;
    return next;
  }
  const parent = { ...((draft[top] as Record<string, unknown> | null | undefined) ?? {}) };
  if (value === undefined) delete parent[member];
  else parent[member] = value;
  next[top] = Object.keys(parent).length > 0 ? parent : null;
  return next;
}

/** What a cleared field becomes: the API's default, null for a nullable field without one, else absent. */
function cleared(setting: Setting): unknown {
  if (setting.default !== null) return setting.default;
  return 'nullable' in setting.kind && setting.kind.nullable ? null : undefined;
}

/** The default as the field shows it (in its unit). */
export function shownDefault(setting: Setting): string {
  const value = setting.default;
  if (value === null) return 'none';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(', ');
  if (setting.kind.type === 'number' && typeof value === 'number') return `${value / (setting.kind.scale ?? 1)}${setting.kind.unit ? ` ${setting.kind.unit}` : ''}`;
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  return plainText(value);
}

interface InputProps {
  setting: Setting;
  value: unknown;
  onChange: (value: unknown) => void;
  invalid: boolean;
}

/** The editor of one setting (without its label and help). */
export function SettingInput({ setting, value, onChange, invalid }: InputProps) {
  const id = settingId(setting);
  const kind = setting.kind;
  const cls = invalid ? 'invalid' : undefined;
  const text = (e: Event) => (e.target as HTMLInputElement).value;
  switch (kind.type) {
    case 'number': {
      const scale = kind.scale ?? 1;
      const shown = typeof value === 'number' ? value / scale : '';
      return (
        <input id={id} class={cls} type="number" min={kind.min / scale} max={kind.max / scale} step={kind.step / scale} value={shown} placeholder={shownDefault(setting)}
          onInput={(e) => {
            const input = e.target as HTMLInputElement;
            if (input.value === '') return onChange(cleared(setting));
            if (Number.isNaN(input.valueAsNumber)) return; // half-typed ("1e"): keep the last number
            const raw = input.valueAsNumber * scale;
            onChange(kind.integer ? Math.round(raw) : raw);
          }} />
      );
    }
    case 'text':
      return <input id={id} class={cls} type={kind.inputType ?? 'text'} maxLength={kind.maxLength} value={typeof value === 'string' ? value : ''} placeholder={setting.default === null ? '(none)' : plainText(setting.default)}
        onInput={(e) => onChange(text(e) === '' ? cleared(setting) : text(e))} />;
    case 'bool':
      return <input id={id} class={cls} type="checkbox" checked={typeof value === 'boolean' ? value : setting.default === true} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} />;
    case 'enum':
      return (
        <select id={id} class={cls} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange((e.target as HTMLSelectElement).value === '' ? cleared(setting) : (e.target as HTMLSelectElement).value)}>
          {(kind.nullable || typeof value !== 'string') && <option value="">{setting.default === null ? '(none)' : `(default: ${plainText(setting.default)})`}</option>}
          {kind.options.map((o) => <option key={o} value={o}>{o}</option>)}
        </select>
      );
    case 'checks': {
      const ticked = Array.isArray(value) ? (value as string[]) : [];
      return (
        <div id={id} class={`checks ${cls ?? ''}`}>
          {kind.options.map((o) => (
            <label key={o}><input type="checkbox" data-value={o} checked={ticked.includes(o)} onChange={(e) => {
              const next = (e.target as HTMLInputElement).checked ? [...ticked, o] : ticked.filter((t) => t !== o);
              onChange(next.length > 0 ? kind.options.filter((x) => next.includes(x)) : null);
            }} /> {o}</label>
          ))}
        </div>
      );
    }
    case 'list':
      return <ListInput id={id} cls={cls} kind={kind} value={value} onChange={onChange} />;
    case 'rows':
      return <RowsInput id={id} kind={kind} value={value} onChange={onChange} invalid={invalid} />;
    case 'json':
      return <JsonInput id={id} cls={cls} value={value} onChange={onChange} />;
  }
}

/** Strings one a line; blank lines are dropped. Edited as text, so a line being typed is not lost. */
function ListInput({ id, cls, kind, value, onChange }: { id: string; cls?: string; kind: Extract<SettingKind, { type: 'list' }>; value: unknown; onChange: (v: unknown) => void }) {
  const joined = Array.isArray(value) ? (value as string[]).join('\n') : '';
  const [text, setText] = useState(joined);
  const lines = (t: string) => t.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const shown = lines(text).join('\n') === joined ? text : joined; // the draft changed elsewhere (Revert, the JSON tab)
  return (
    <textarea id={id} class={cls} rows={3} value={shown} placeholder="one a line" onInput={(e) => {
      const t = (e.target as HTMLTextAreaElement).value;
      setText(t);
      const items = lines(t).slice(0, kind.maxItems);
      onChange(items.length === 0 && kind.nullable ? null : items);
    }} />
  );
}

/** An array of objects as rows of inputs (the analysis fields, the pronunciations). */
function RowsInput({ id, kind, value, onChange, invalid }: { id: string; kind: Extract<SettingKind, { type: 'rows' }>; value: unknown; onChange: (v: unknown) => void; invalid: boolean }) {
  const rows = Array.isArray(value) ? (value as Record<string, unknown>[]) : [];
  const update = (index: number, key: string, cell: unknown) => {
    const row = { ...rows[index] };
    if (cell === undefined) delete row[key];
    else row[key] = cell;
    onChange(rows.map((r, i) => (i === index ? row : r)));
  };
  const remove = (index: number) => onChange(rows.filter((_, i) => i !== index));
  const add = () => onChange([...rows, Object.fromEntries(kind.columns.filter((c) => !c.commaList).map((c) => [c.key, c.options?.[0] ?? '']))]);
  return (
    <div id={id} class={`setting-rows${invalid ? ' invalid' : ''}`}>
      {rows.map((row, index) => (
        <div class="setting-row" key={index} data-row={index}>
          {kind.columns.map((c) => {
            const cell = row[c.key];
            const label = <span class="muted">{c.label}</span>;
            if (c.options) {
              return <label key={c.key}>{label}<select data-column={c.key} value={typeof cell === 'string' ? cell : ''} onChange={(e) => update(index, c.key, (e.target as HTMLSelectElement).value)}>{c.options.map((o) => <option key={o} value={o}>{o}</option>)}</select></label>;
            }
            if (c.commaList) return <label key={c.key}>{label}<CommaInput column={c.key} maxLength={c.maxLength} value={cell} onChange={(items) => update(index, c.key, items)} /></label>;
            return <label key={c.key}>{label}<input data-column={c.key} maxLength={c.maxLength} value={typeof cell === 'string' ? cell : ''} onInput={(e) => update(index, c.key, (e.target as HTMLInputElement).value)} /></label>;
          })}
          <button type="button" class="secondary" data-action="remove-row" onClick={() => remove(index)}>Remove</button>
        </div>
      ))}
      {rows.length < kind.maxItems && <button type="button" class="secondary" data-action="add-row" onClick={add}>Add</button>}
    </div>
  );
}

/** Strings separated by commas (an enum's choices); none is undefined. Edited as text, so a comma being typed stays. */
function CommaInput({ column, maxLength, value, onChange }: { column: string; maxLength: number; value: unknown; onChange: (items: string[] | undefined) => void }) {
  const joined = Array.isArray(value) ? (value as string[]).join(', ') : '';
  const [text, setText] = useState(joined);
  const items = (t: string) => t.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const shown = items(text).join(', ') === joined ? text : joined;
  return (
    <input data-column={column} maxLength={maxLength} value={shown} onInput={(e) => {
      const t = (e.target as HTMLInputElement).value;
      setText(t);
      const next = items(t);
      onChange(next.length > 0 ? next : undefined);
    }} />
  );
}

/** A free-form object as JSON; the draft changes only when the text parses to an object (or is empty: null). */
function JsonInput({ id, cls, value, onChange }: { id: string; cls?: string; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(value == null ? '' : JSON.stringify(value));
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <div>
      <textarea id={id} class={cls} rows={2} spellcheck={false} value={text} placeholder="{ }" onInput={(e) => {
        const t = (e.target as HTMLTextAreaElement).value;
        setText(t);
        if (t.trim() === '') {
          setProblem(null);
          return onChange(null);
        }
        try {
          const parsed: unknown = JSON.parse(t);
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('an object is expected');
          setProblem(null);
          onChange(parsed);
        } catch (error) {
          setProblem(`Not saved until it is a JSON object: ${error instanceof Error ? error.message : String(error)}`);
        }
      }} />
      {problem && <span class="field-error">{problem}</span>}
    </div>
  );
}
