/**
 * The agent form: every agent setting (agent-settings.ts), grouped as Retell's dashboard groups
 * them, the voice picked from the server's voices, the response engine; and the diff between two
 * agent versions. The form edits the same object as the JSON editor: fields it does not show
 * are kept as they are.
 */
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type Api, ApiError } from './api.ts';
import { type AgentDraft, SETTING_GROUPS, type SettingGroup, fieldOfError, settingId } from './agent-settings.ts';
import { SettingInput, readSetting, shownDefault, writeSetting } from './setting-input.tsx';
import { ErrorBox, messageOf, useAsync } from './ui.tsx';

export type { AgentDraft };

/** One entry of `GET /list-voices` (Retell's shape; only these fields are read). */
interface Voice {
  voice_id: string;
  voice_name?: string;
  provider?: string;
  gender?: string;
  accent?: string;
}

/** The voice picker: the server's voices, or a plain field when it has no list (404) or it fails. */
function VoicePicker({ api, value, onChange }: { api: Api; value: string; onChange: (v: string) => void }) {
  const voices = useAsync(async () => {
    try {
      return await api.get<Voice[]>('/list-voices');
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null; // this server lists no voices
      throw e;
    }
  }, []);
  if (voices.loading) return <span class="muted">Loading voices…</span>;
  const list = Array.isArray(voices.data) ? voices.data : null;
  if (!list || list.length === 0) {
    return (
      <>
        <input id="agent-voice" value={value} maxLength={128} required onInput={(e) => onChange((e.target as HTMLInputElement).value)} />
        <span class="hint" id="agent-voice-hint">{voices.error ? `Could not list the voices: ${voices.error}` : 'This server lists no voices: type a voice id (e.g. flite-kal16).'}</span>
      </>
    );
  }
  const known = list.some((v) => v.voice_id === value);
  return (
    <select id="agent-voice" value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      {!known && <option value={value}>{value} (not in the list)</option>}
      {list.map((v) => (
        <option key={v.voice_id} value={v.voice_id}>
          {v.voice_name ?? v.voice_id}{v.provider ? ` · ${v.provider}` : ''}{v.gender ? ` · ${v.gender}` : ''}{v.accent ? ` · ${v.accent}` : ''}
        </option>
      ))}
    </select>
  );
}

/** Longest preview text (the API's bound: MAX_PREVIEW_TEXT_LENGTH in src/http/routes/voice.routes.ts). */
const PREVIEW_MAX_CHARS = 300;

/**
 * Hear the voice: a sentence spoken by the server's speech engine (POST /v2/voice-preview) with
 * the draft's voice, speed, volume, pronunciations and normalising, saved or not.
 */
function VoicePreview({ api, draft }: { api: Api; draft: AgentDraft }) {
  const [text, setText] = useState('Hello, thanks for calling. How can I help you today?');
  const [url, setUrl] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => () => {
    if (url) URL.revokeObjectURL(url);
  }, [url]);
  const play = async () => {
    setBusy(true);
    setError(null);
    try {
      const style = Object.fromEntries(['voice_id', 'voice_speed', 'volume', 'normalize_for_speech', 'pronunciation_dictionary'].filter((k) => draft[k] !== undefined && draft[k] !== null).map((k) => [k, draft[k]]));
      const response = await api.raw('POST', '/v2/voice-preview', { text, ...style });
      setUrl(URL.createObjectURL(await response.blob()));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="voice-preview" id="voice-preview">
      <div class="row">
        <input id="voice-preview-text" aria-label="Sentence to hear" value={text} maxLength={PREVIEW_MAX_CHARS} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <button type="button" class="secondary" id="voice-preview-play" disabled={busy || text.trim() === ''} onClick={() => void play()}>{busy ? 'Speaking…' : 'Hear it'}</button>
      </div>
      {url && <audio id="voice-preview-audio" src={url} controls autoplay />}
      <ErrorBox error={error} id="voice-preview-error" />
    </div>
  );
}

interface EngineChoice {
  id: string;
  label: string;
}

/** One group's settings (the voice has its picker and a preview). */
function SettingFields({ api, group, draft, onChange, errorField, error }: { api: Api; group: SettingGroup; draft: AgentDraft; onChange: (next: AgentDraft) => void; errorField: string | null; error: string | null }) {
  return (
    <fieldset class="setting-group" id={`agent-group-${group.id}`}>
      <legend>{group.title}</legend>
      <div class="form">
        {group.settings.map((setting) => {
          const id = settingId(setting);
          const invalid = errorField !== null && setting.key.split('.')[0] === errorField;
          const value = readSetting(draft, setting.key);
          const change = (v: unknown) => onChange(writeSetting(draft, setting.key, v));
          return (
            <Fragment key={setting.key}>
              <label for={id}>{setting.label}{setting.noEffect && <> <span class="badge no-effect" title="Accepted as Retell does; without effect on this server">no effect</span></>}</label>
              <div>
                {setting.key === 'voice_id' ? (
                  <><VoicePicker api={api} value={typeof value === 'string' ? value : ''} onChange={change} /><VoicePreview api={api} draft={draft} /></>
                ) : (
                  <SettingInput setting={setting} value={value} onChange={change} invalid={invalid} />
                )}
              </div>
              <span class="hint" data-hint={setting.key}>{setting.help} Default: {shownDefault(setting)}.</span>
              {invalid && error && <span class="field-error" id={`${id}-error`} role="alert">{error}</span>}
            </Fragment>
          );
        })}
      </div>
    </fieldset>
  );
}

/**
 * The agent form; `onChange` receives the whole draft with the field changed. `error` is the
 * API's refusal of the last save, shown again on the field it names; `withoutEffect` is the
 * answer's `accepted_without_effect`.
 */
export function AgentForm({ api, draft, onChange, error = null, withoutEffect = [] }: { api: Api; draft: AgentDraft; onChange: (next: AgentDraft) => void; error?: string | null; withoutEffect?: readonly string[] }) {
  const set = (field: string, value: unknown) => onChange({ ...draft, [field]: value });
  const errorField = error ? fieldOfError(error) : null;
  const engine = (draft.response_engine ?? { type: 'conversation_flow' }) as { type: string; conversation_flow_id?: string; llm_id?: string; llm_websocket_url?: string };
  const engines = useAsync(async (): Promise<Record<string, EngineChoice[]>> => {
    const [flows, llms] = await Promise.all([
      api.get<{ conversation_flow_id: string; name?: string; start_node_id?: string; nodes?: unknown[] }[]>('/list-conversation-flows'),
      api.get<{ llm_id: string; model?: string | null }[]>('/list-service-llms'),
    ]);
    return {
      conversation_flow: flows.map((f): EngineChoice => ({ id: f.conversation_flow_id, label: `${f.name ? `${f.name} · ` : ''}${f.conversation_flow_id} (${f.nodes?.length ?? 0} nodes)` })),
      service_llm: llms.map((l): EngineChoice => ({ id: l.llm_id, label: `${l.llm_id}${l.model ? ` (${l.model})` : ''}` })),
    };
  }, []);
  const engineIdField = engine.type === 'service_llm' ? 'llm_id' : 'conversation_flow_id';
  const engineId = (engine.type === 'service_llm' ? engine.llm_id : engine.conversation_flow_id) ?? '';
  const choices = engines.data?.[engine.type] ?? [];

  return (
    <div id="agent-form">
      {withoutEffect.length > 0 && (
        <p class="notice" id="agent-without-effect">Set, and accepted as Retell does, but without effect on this server: {withoutEffect.join(', ')}.</p>
      )}
      <fieldset class="setting-group" id="agent-group-engine">
      <legend>Response engine and knowledge</legend>
      <div class="form">
      <label for="agent-engine-type">Response engine</label>
      <select id="agent-engine-type" class={errorField === 'response_engine' ? 'invalid' : undefined} value={engine.type} onChange={(e) => {
        const type = (e.target as HTMLSelectElement).value;
        const first = engines.data?.[type]?.[0]?.id ?? '';
        set('response_engine', type === 'custom_llm' ? { type, llm_websocket_url: '' } : type === 'service_llm' ? { type, llm_id: first } : { type, conversation_flow_id: first });
      }}>
        <option value="conversation_flow">conversation flow</option>
        <option value="service_llm">service LLM</option>
        <option value="custom_llm">custom LLM (your server)</option>
      </select>

      {engine.type === 'custom_llm' ? <>
      <label for="agent-llm-url">LLM WebSocket URL</label>
      <div>
        <input id="agent-llm-url" type="url" placeholder="wss://example.com/llm-websocket" value={engine.llm_websocket_url ?? ''} onInput={(e) => set('response_engine', { ...engine, llm_websocket_url: (e.target as HTMLInputElement).value })} />
        <span class="hint">Each call dials this URL + /call_id and speaks Retell's LLM WebSocket protocol (docs/custom-llm.md).</span>
      </div>
      </> : <>
      <label for="agent-engine-id">{engine.type === 'service_llm' ? 'Service LLM' : 'Conversation flow'}</label>
      <div>
        <select id="agent-engine-id" value={engineId} onChange={(e) => set('response_engine', { type: engine.type, [engineIdField]: (e.target as HTMLSelectElement).value })}>
          {!choices.some((c) => c.id === engineId) && <option value={engineId}>{engineId || '(choose)'}</option>}
          {choices.map((c) => <option key={c.id} value={c.id}>{c.label}</option>)}
        </select>
        {engines.error && <span class="hint">Could not list the engines: {engines.error}</span>}
        {engine.type === 'conversation_flow' && engineId && <> <a href={`#/flows/${engineId}`}>Open the flow</a></>}
        {engine.type === 'service_llm' && engineId && <> <a href={`#/llms/${engineId}`}>Open the LLM</a></>}
      </div>
      </>}
      <span class="hint">Knowledge bases belong to the service LLM (its knowledge_base_ids and kb_config) or to a custom LLM's engine: see the Knowledge bases card.</span>
      {errorField === 'response_engine' && error && <span class="field-error" id="agent-engine-type-error" role="alert">{error}</span>}
      </div>
      </fieldset>
      {SETTING_GROUPS.map((group) => <SettingFields key={group.id} api={api} group={group} draft={draft} onChange={onChange} errorField={errorField} error={error} />)}
    </div>
  );
}

/** Every leaf of a JSON value by path (`response_engine.type`, `nodes[0].id`); objects and arrays are walked. */
export function flatten(value: unknown, prefix = '', out: Map<string, string> = new Map()): Map<string, string> {
  if (value !== null && typeof value === 'object' && (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0)) {
    if (Array.isArray(value)) value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
    else for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, JSON.stringify(value));
  }
  return out;
}

/** The fields that differ between two versions: path, before, after (a missing side is undefined). */
export function diffVersions(before: unknown, after: unknown): { path: string; before?: string; after?: string }[] {
  const a = flatten(before);
  const b = flatten(after);
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  return paths.filter((p) => a.get(p) !== b.get(p)).map((p) => ({ path: p, before: a.get(p), after: b.get(p) }));
}

/** Two versions side by side: pick them, see the fields that changed. */
export function VersionDiff({ versions }: { versions: Record<string, unknown>[] }) {
  const numbers = versions.map((v) => Number(v.version)).sort((x, y) => x - y);
  const latest = numbers.at(-1) ?? 0;
  const [from, setFrom] = useState(numbers.at(-2) ?? latest);
  const [to, setTo] = useState(latest);
  if (numbers.length < 2) return <p class="muted" id="version-diff">One version only: save a change to compare versions.</p>;
  const find = (n: number) => versions.find((v) => Number(v.version) === n);
  const rows = diffVersions(find(from), find(to));
  const pick = (set: (n: number) => void) => (e: Event) => set(Number((e.target as HTMLSelectElement).value));
  return (
    <div id="version-diff">
      <div class="row">
        <label>From <select id="diff-from" value={from} onChange={pick(setFrom)}>{numbers.map((n) => <option key={n} value={n}>v{n}</option>)}</select></label>
        <label>to <select id="diff-to" value={to} onChange={pick(setTo)}>{numbers.map((n) => <option key={n} value={n}>v{n}</option>)}</select></label>
      </div>
      {rows.length === 0 ? (
        <p class="muted">No differences.</p>
      ) : (
        <div class="table-wrap">
          <table class="diff">
            <thead><tr><th>Field</th><th>v{from}</th><th>v{to}</th></tr></thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.path} data-path={r.path} class={r.before === undefined ? 'added' : r.after === undefined ? 'removed' : 'changed'}>
                  <td>{r.path}</td>
                  <td class="before">{r.before ?? '—'}</td>
                  <td class="after">{r.after ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** A message for a failed parse of the JSON editor. */
export function jsonError(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (e) {
    return `Not valid JSON: ${messageOf(e)}`;
  }
}
