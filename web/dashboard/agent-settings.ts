/**
 * Every agent setting the API takes, as the agent form shows it: grouped as Retell's dashboard
 * groups them, each with its range, default and one line of help. The ranges and defaults are
 * the API's (src/domain/agent.ts); test/web/agent-settings.test.ts holds this table to that schema,
 * so a field added to the API and not here, or a range changed there only, fails the suite.
 * Plain data (no JSX), so Node can import it.
 */

/** The editable part of an agent (the JSON editor's object). */
export type AgentDraft = Record<string, unknown>;

/** A default or a choice as text (`#`, `1200`, `["a"]`). */
export function plainText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? '';
}

/** How a field is edited. */
export type SettingKind =
  | { type: 'number'; min: number; max: number; step: number; /** API units per shown unit (ms per s = 1000). */ scale?: number; unit?: string; integer?: boolean }
  | { type: 'text'; maxLength: number; /** Empty means null (a nullable field) rather than absent. */ nullable?: boolean; inputType?: 'url' }
  | { type: 'bool' }
  | { type: 'enum'; options: readonly string[]; nullable?: boolean }
  | { type: 'checks'; options: readonly string[] }
  | { type: 'list'; maxItems: number; maxLength: number; nullable?: boolean }
  | { type: 'rows'; maxItems: number; columns: readonly RowColumn[] }
  | { type: 'json' };

/** One column of a `rows` field (an array of objects). */
export interface RowColumn {
  key: string;
  label: string;
  /** A select of these values; otherwise text. */
  options?: readonly string[];
  /** Text split on commas into an array (an enum field's choices). */
  commaList?: boolean;
  maxLength: number;
}

export interface Setting {
  /** The API field; a dotted path for a member of an object field (`user_dtmf_options.digit_limit`). */
  key: string;
  label: string;
  kind: SettingKind;
  /** The API's default, as the API writes it (null: none, the server's own setting applies). */
  default: unknown;
  help: string;
  /** Accepted and answered as Retell does, without effect here: the help says why. */
  noEffect?: boolean;
  /** The element id, when the default (`agent-` + the key with dashes) would change an old one. */
  id?: string;
}

export interface SettingGroup {
  id: string;
  title: string;
  settings: readonly Setting[];
}

const ms = (min: number, max: number, step: number): SettingKind => ({ type: 'number', min, max, step, integer: true, unit: 'ms' });
const seconds = (min: number, max: number): SettingKind => ({ type: 'number', min, max, step: 1000, scale: 1000, unit: 's', integer: true });
const ratio = (min: number, max: number, step = 0.05): SettingKind => ({ type: 'number', min, max, step });
const WITHOUT_AMBIENT = 'Without effect here: no ambient sound is mixed in.';

/** The groups in the order the form shows them; the voice and the response engine have their own editors. */
export const SETTING_GROUPS: readonly SettingGroup[] = [
  {
    id: 'general',
    title: 'General',
    settings: [
      { key: 'agent_name', label: 'Name', kind: { type: 'text', maxLength: 256, nullable: true }, default: null, help: 'Shown in lists and on calls; empty for none.', id: 'agent-name' },
      { key: 'version_description', label: 'Version description', kind: { type: 'text', maxLength: 2000, nullable: true }, default: null, help: 'What this version changes, for the people who keep the agent.' },
      { key: 'version_title', label: 'Version title', kind: { type: 'text', maxLength: 256, nullable: true }, default: null, help: 'Without effect here: titles are kept for publish-agent-version, as list-agent-versions shows them.', noEffect: true },
    ],
  },
  {
    id: 'voice',
    title: 'Voice and speech',
    settings: [
      { key: 'voice_id', label: 'Voice', kind: { type: 'text', maxLength: 128 }, default: 'flite-kal16', help: "One of the speech engine's voices (GET /list-voices); absent, the server's default (TTS_VOICE).", id: 'agent-voice' },
      { key: 'voice_speed', label: 'Voice speed', kind: ratio(0.5, 2), default: 1, help: 'Speaking rate, 0.5 (slow) to 2 (fast).' },
      { key: 'volume', label: 'Volume', kind: ratio(0, 2), default: 1, help: "Gain on the agent's speech, 0 to 2, clipped at full scale." },
      { key: 'language', label: 'Language', kind: { type: 'text', maxLength: 35 }, default: 'en-US', help: 'A BCP-47 tag the recogniser and the voice speak (en-US).', id: 'agent-language' },
      { key: 'normalize_for_speech', label: 'Normalise for speech', kind: { type: 'bool' }, default: false, help: 'Numbers, currencies, dates and times spoken as words (English).' },
      { key: 'begin_message_delay_ms', label: 'Begin message delay', kind: ms(0, 5000, 100), default: 0, help: "The agent's opening waits this long, 0 to 5000 ms (when the agent speaks first)." },
      {
        key: 'pronunciation_dictionary',
        label: 'Pronunciations',
        kind: { type: 'rows', maxItems: 200, columns: [{ key: 'word', label: 'Word', maxLength: 100 }, { key: 'alphabet', label: 'Alphabet', options: ['ipa', 'cmu', 'pinyin', 'jyutping'], maxLength: 10 }, { key: 'phoneme', label: 'Phonemes', maxLength: 200 }] },
        default: null,
        help: 'Words said as written in IPA or CMU ARPAbet (up to 200); pinyin and jyutping are kept, unread by English voices.',
      },
      { key: 'voice_temperature', label: 'Voice temperature', kind: ratio(0, 2), default: 1, help: 'Without effect here: no voice here has a variability control.', noEffect: true },
      { key: 'fallback_voice_ids', label: 'Fallback voices', kind: { type: 'list', maxItems: 10, maxLength: 128, nullable: true }, default: null, help: 'Voices tried in order when the voice\'s provider fails before it speaks (up to 10; each one a configured provider speaks); the call stays on the voice that spoke.' },
      { key: 'ambient_sound', label: 'Ambient sound', kind: { type: 'enum', options: ['coffee-shop', 'convention-hall', 'summer-outdoor', 'mountain-outdoor', 'static-noise', 'call-center'], nullable: true }, default: null, help: WITHOUT_AMBIENT, noEffect: true },
      { key: 'ambient_sound_volume', label: 'Ambient sound volume', kind: ratio(0, 2), default: 1, help: WITHOUT_AMBIENT, noEffect: true },
    ],
  },
  {
    id: 'call',
    title: 'Call settings',
    settings: [
      { key: 'interruption_sensitivity', label: 'Interruption sensitivity', kind: ratio(0, 1), default: 1, help: '0 (the user never interrupts the agent) to 1 (any speech interrupts).', id: 'agent-interruption' },
      { key: 'responsiveness', label: 'Responsiveness', kind: ratio(0, 1), default: 1, help: 'How soon the agent answers once the user stops: 1 soonest, lower waits longer.' },
      { key: 'end_of_turn_min_silence_ms', label: 'End of turn: least silence', kind: ms(100, 2000, 50), default: 250, help: "Shortest silence that ends the user's turn after a complete sentence, 100 to 2000 ms." },
      { key: 'end_of_turn_max_silence_ms', label: 'End of turn: most silence', kind: ms(200, 5000, 100), default: 1200, help: 'Longest silence before the turn ends whatever was said, 200 to 5000 ms.' },
      { key: 'preemptive_replies', label: 'Pre-emptive replies', kind: { type: 'bool' }, default: true, help: 'Prepare the reply while the user pauses; played only if the turn ends with those words.' },
      { key: 'max_call_duration_ms', label: 'Max duration (min)', kind: { type: 'number', min: 60_000, max: 7_200_000, step: 60_000, scale: 60_000, unit: 'min', integer: true }, default: 3_600_000, help: '1 to 120 minutes; the call ends at the cap.', id: 'agent-max-duration' },
      { key: 'end_call_after_silence_ms', label: 'End after silence (s)', kind: seconds(10_000, 3_600_000), default: 600_000, help: '10 s to 1 h of silence from both sides ends the call.', id: 'agent-silence' },
      { key: 'reminder_trigger_ms', label: 'Reminder after (s)', kind: seconds(1_000, 3_600_000), default: 10_000, help: 'Custom-LLM agents: a reminder_required after this much user silence, 1 s to 1 h.' },
      { key: 'reminder_max_count', label: 'Most reminders', kind: { type: 'number', min: 0, max: 20, step: 1, integer: true }, default: 1, help: 'Reminders in a row without the user speaking, 0 to 20.' },
      { key: 'allow_user_dtmf', label: 'Keypad input', kind: { type: 'bool' }, default: true, help: 'Keys pressed on a phone are taken as the caller\'s input.' },
      { key: 'user_dtmf_options.digit_limit', label: 'Keypad: most digits', kind: { type: 'number', min: 1, max: 50, step: 1, integer: true }, default: 50, help: 'A keypad turn ends at this many digits, 1 to 50.' },
      { key: 'user_dtmf_options.termination_key', label: 'Keypad: end key', kind: { type: 'enum', options: ['#', '*', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'], nullable: true }, default: '#', help: 'The key that ends a keypad turn (not part of it).' },
      { key: 'user_dtmf_options.timeout_ms', label: 'Keypad: wait', kind: ms(1000, 15_000, 500), default: 2500, help: 'A keypad turn ends this long after the last key, 1000 to 15000 ms.' },
      { key: 'enable_backchannel', label: 'Backchannel', kind: { type: 'bool' }, default: false, help: 'Short "uh-huh"s in the caller\'s pauses after 3 s of speech, out of band: not a turn, not in the transcript.' },
      { key: 'backchannel_frequency', label: 'Backchannel frequency', kind: ratio(0, 1), default: null, help: 'The share of the moments for a backchannel that get one, 0 to 1 (default 0.8).' },
      { key: 'backchannel_words', label: 'Backchannel words', kind: { type: 'list', maxItems: 50, maxLength: 50, nullable: true }, default: null, help: 'The words said, one a line (default okay, uh-huh, yeah).' },
      { key: 'enable_voicemail_detection', label: 'Voicemail detection', kind: { type: 'bool' }, default: false, help: 'Outbound phone calls: the agent waits while it is decided whether a person or a machine answered.' },
      { key: 'voicemail_option', label: 'Voicemail option', kind: { type: 'json' }, default: null, help: 'On a machine: {"action": {"type": "hangup"}}, {"type": "static_text", "text": ...} or {"type": "prompt", "text": ...}.' },
      { key: 'voicemail_detection_timeout_ms', label: 'Voicemail detection for (s)', kind: seconds(5_000, 180_000), default: null, help: 'How long the callee is listened to before it is taken for a person, 5 s to 3 min (default 30 s).' },
      { key: 'voicemail_message', label: 'Voicemail message', kind: { type: 'text', maxLength: 2_000, nullable: true }, default: null, help: "Retell's older field: the message left on a machine when voicemail_option does not say." },
    ],
  },
  {
    id: 'transcription',
    title: 'Transcription',
    settings: [
      { key: 'boosted_keywords', label: 'Boosted keywords', kind: { type: 'list', maxItems: 100, maxLength: 100 }, default: [], help: 'Names, brands and terms the recogniser should expect, one a line (up to 100).' },
      { key: 'denoising_mode', label: 'Denoising', kind: { type: 'enum', options: ['no-denoise', 'noise-cancellation'] }, default: 'no-denoise', help: "noise-cancellation suppresses noise in the caller's audio before it is heard." },
      { key: 'stt_mode', label: 'Recogniser mode', kind: { type: 'enum', options: ['fast', 'accurate', 'custom'] }, default: 'fast', help: 'Without effect here: the recogniser has one mode.', noEffect: true },
    ],
  },
  {
    id: 'webhooks',
    title: 'Webhooks and post-call analysis',
    settings: [
      { key: 'webhook_url', label: 'Webhook URL', kind: { type: 'text', maxLength: 2048, nullable: true, inputType: 'url' }, default: null, help: "The agent's own receiver of its calls' events (optional).", id: 'agent-webhook' },
      { key: 'webhook_events', label: 'Webhook events', kind: { type: 'checks', options: ['call_started', 'call_ended', 'call_analyzed'] }, default: null, help: "Retell's events to send there; none ticked sends call.finished as before." },
      { key: 'webhook_timeout_ms', label: 'Webhook timeout', kind: ms(1000, 60_000, 1000), default: null, help: "Each delivery attempt's timeout, 1000 to 60000 ms, capped by the server's." },
      {
        key: 'post_call_analysis_data',
        label: 'Analysis fields',
        kind: {
          type: 'rows',
          maxItems: 50,
          columns: [
            { key: 'name', label: 'Name', maxLength: 64 },
            { key: 'type', label: 'Type', options: ['string', 'enum', 'boolean', 'number'], maxLength: 10 },
            { key: 'description', label: 'What to extract', maxLength: 2000 },
            { key: 'choices', label: 'Choices (enum, comma-separated)', commaList: true, maxLength: 2000 },
          ],
        },
        default: [],
        help: 'Custom fields the analysis fills from each call (with an LLM configured), up to 50.',
      },
      { key: 'post_call_analysis_model', label: 'Analysis model', kind: { type: 'text', maxLength: 64, nullable: true }, default: null, help: 'Without effect here: the analysis runs on the configured LLM.', noEffect: true },
    ],
  },
  {
    id: 'security',
    title: 'Security and storage',
    settings: [
      { key: 'data_storage_setting', label: 'Storage', kind: { type: 'enum', options: ['everything', 'everything_except_pii', 'basic_attributes_only'] }, default: 'everything', help: 'What a call keeps: everything, no PII, or only its basic attributes.', id: 'agent-storage' },
      { key: 'opt_out_sensitive_data_storage', label: 'Opt out of sensitive storage', kind: { type: 'bool' }, default: false, help: 'Stores the calls as basic_attributes_only (no transcript, recording or PII).' },
      { key: 'is_public', label: 'Public', kind: { type: 'bool' }, default: false, help: 'Without effect here: agents have no public page.', noEffect: true },
    ],
  },
];

/** The element id of a setting. */
export function settingId(setting: Setting): string {
  return setting.id ?? `agent-${setting.key.replace(/[._]/g, '-')}`;
}

/** Every setting of every group. */
export const ALL_SETTINGS: readonly Setting[] = SETTING_GROUPS.flatMap((g) => g.settings);

/**
 * The field an API error names: `body/<field>` in a validation message, or a known field's name at
 * the start of a service's message (`opt_out_sensitive_data_storage is true, ...`). The top-level
 * field only; null when none is named.
 */
export function fieldOfError(message: string): string | null {
  const path = /\bbody\/([a-z_]+)/.exec(message);
  if (path?.[1]) return path[1];
  const known = new Set([...ALL_SETTINGS.map((s) => s.key.split('.')[0]!), 'response_engine']);
  const words = message.match(/[a-z][a-z0-9_]*[a-z0-9]/g) ?? [];
  return words.find((w) => w.includes('_') && known.has(w)) ?? null;
}
