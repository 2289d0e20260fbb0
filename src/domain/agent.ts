import { Type, type Static } from '@sinclair/typebox';
import { withoutUndefined } from '../lib/objects.ts';
import { type ConversationFlowDefinition, ConversationFlowOverride } from './conversation-flow.ts';
import { type ServiceLlmDefinition, ServiceLlmOverride } from './service-llm.ts';
import { KbConfig, KnowledgeBaseIds } from './knowledge-base.ts';
import { Name, Nullable, ResourceId, Strict, StringEnum } from './schema-kit.ts';
import { STORAGE_POLICIES, type StoragePolicy } from './storage-policy.ts';
import { AGENT_EVENT_KINDS, type AgentEventKind, MAX_WEBHOOK_URL_LENGTH } from './webhook.ts';

const EngineId = ResourceId;

export const ResponseEngine = Type.Union([
  Strict({ type: Type.Literal('conversation_flow'), conversation_flow_id: EngineId }),
  Strict({ type: Type.Literal('service_llm'), llm_id: EngineId }),
  Strict({
    type: Type.Literal('custom_llm'),
    llm_websocket_url: Type.String({
      minLength: 1,
      maxLength: MAX_WEBHOOK_URL_LENGTH,
      description: "The user's server speaking Retell's LLM WebSocket protocol: an absolute ws(s) URL; each call dials `{llm_websocket_url}/{call_id}` (docs/custom-llm.md).",
    }),
    // Issue 29: the knowledge bases whose chunks each response_required carries (knowledge_base_chunks).
    knowledge_base_ids: Type.Optional(KnowledgeBaseIds),
    kb_config: Type.Optional(KbConfig),
  }),
]);
export type ResponseEngine = Static<typeof ResponseEngine>;

export const StoragePolicySchema = Type.Union(STORAGE_POLICIES.map((p) => Type.Literal(p)));
/**
 * A URL deliveries go to: a subscription's `url` and an agent's `webhook_url`. The schema bounds
 * it; src/services/webhook-url.ts checks the rest (http(s), no credentials, an allowed host) and
 * says which rule failed.
 */
export const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  description: 'An absolute http(s) URL without user name or password, to an allowed destination (docs/webhooks.md).',
});

/** Most custom analysis fields an agent declares. */
export const MAX_ANALYSIS_FIELDS = 50;

const AnalysisFieldName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_][A-Za-z0-9_ .-]*$',
  description: 'The key in call_analysis.custom_analysis_data: letters, digits, _, space, . and -.',
});
export const ANALYSIS_FIELD_TYPES = ['string', 'enum', 'boolean', 'number'] as const;
/**
 * One custom field the post-call analysis fills from the call (Retell's `post_call_analysis_data`
 * item): a string, one of `choices` (enum), a boolean or a number; null when the LLM cannot fill
 * it. One object shape for every type, so a wrong field is reported by name (checkAnalysisFields).
 */
export const PostCallAnalysisField = Strict({
  type: StringEnum(ANALYSIS_FIELD_TYPES),
  name: AnalysisFieldName,
  description: Type.String({ minLength: 1, maxLength: 2_000, description: 'What to extract, told to the LLM.' }),
  examples: Type.Optional(Type.Array(Type.String({ maxLength: 500 }), { maxItems: 10, description: 'Example values, to teach the LLM the style.' })),
  choices: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 50, description: 'enum only (and required there): the values the field may take.' }),
  ),
});
export type PostCallAnalysisField = Static<typeof PostCallAnalysisField>;

/**
 * What the schema does not say of an agent's analysis fields: names are unique, an enum has
 * choices (without repeats) and no other type has any. Returns a message naming the first
 * offender, or null.
 */
export function checkAnalysisFields(fields: readonly PostCallAnalysisField[], field = 'post_call_analysis_data'): string | null {
  const names = new Set<string>();
  for (const f of fields) {
    if (names.has(f.name)) return `${field} has two fields named "${f.name}"`;
    names.add(f.name);
    if (f.type === 'enum' && !f.choices) return `${field}: "${f.name}" is an enum and needs choices`;
    if (f.type !== 'enum' && f.choices) return `${field}: "${f.name}" is a ${f.type}; only enum fields take choices`;
    if (f.choices && new Set(f.choices).size !== f.choices.length) return `${field}: the choices of "${f.name}" repeat a value`;
  }
  return null;
}

/**
 * Retell's `voicemail_option` (issue 24): `hangup` ends the call at once; `static_text` waits for
 * the beep (or the greeting's end), speaks `text` and hangs up; `prompt` has the server's LLM
 * write the message from `text` (the call's dynamic variables filled in), spoken the same way.
 */
export const VoicemailOption = Strict({
  action: Type.Union([
    Strict({ type: Type.Literal('hangup') }),
    Strict({ type: Type.Literal('static_text'), text: Type.String({ minLength: 1, maxLength: 2_000 }) }),
    Strict({ type: Type.Literal('prompt'), text: Type.String({ minLength: 1, maxLength: 2_000 }) }),
  ]),
});
export type VoicemailOptionValue = Static<typeof VoicemailOption>;
/** The voicemail fields: they take effect, and have no default (absent: detection off). */
const VOICEMAIL_FIELDS = ['enable_voicemail_detection', 'voicemail_option', 'voicemail_detection_timeout_ms', 'voicemail_message'] as const;

/** Retell's `denoising_mode` values this server applies (issue 25). */
export const DENOISING_MODES = ['noise-cancellation', 'no-denoise'] as const;
export type DenoisingMode = (typeof DENOISING_MODES)[number];

/** Agent fields besides the response engine: what `agent_override.agent` may change for one call. */
export const AgentSettings = {
  agent_name: Type.Optional(Nullable(Name())),
  voice_id: Type.Optional(Name(128)),
  language: Type.Optional(Type.String({ minLength: 2, maxLength: 35, pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$' })),
  webhook_url: Type.Optional(Nullable(WebhookUrl)),
  data_storage_setting: Type.Optional(StoragePolicySchema),
  /** Hard cap on a call's length; at the cap the call ends with `max_call_duration_ms`. 60 s to 2 h. */
  max_call_duration_ms: Type.Optional(Type.Integer({ minimum: 60_000, maximum: 7_200_000 })),
  /** The call ends (`inactivity`) after this long without user speech. 10 s to 1 h. */
  end_call_after_silence_ms: Type.Optional(Type.Integer({ minimum: 10_000, maximum: 3_600_000 })),
  /**
   * Custom-LLM agents: after the agent finishes speaking and the user stays silent this long, the
   * user's server gets a `reminder_required` (docs/custom-llm.md). 1 s to 1 h; default 10 s.
   */
  reminder_trigger_ms: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 3_600_000 })),
  /** Most reminders in a row without the user speaking; 0 = none. Default 1. */
  reminder_max_count: Type.Optional(Type.Integer({ minimum: 0, maximum: 20 })),
  /** 0 = the user can never interrupt the agent, 1 = the slightest speech interrupts. */
  interruption_sensitivity: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  /**
   * 0..1, as Retell: how soon the agent answers once the user stops. 1 answers after the minimum
   * end-of-turn silence when what was said is complete; lower values wait longer (docs/voice-pipeline.md).
   */
  responsiveness: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  /** Shortest silence that ends the user's turn (after a complete sentence), ms. 100 to 2000. */
  end_of_turn_min_silence_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 2_000 })),
  /**
   * Longest silence before the user's turn ends whatever was said (after "and", "um", half a phone
   * number), ms. 200 to 5000; a maximum below the minimum is read as the minimum.
   */
  end_of_turn_max_silence_ms: Type.Optional(Type.Integer({ minimum: 200, maximum: 5_000 })),
  /**
   * Prepare the reply while the user pauses, before the turn is confirmed; play it only if the
   * turn ends with those words (docs/voice-pipeline.md). Side effects wait for the confirmation.
   * Default true; with an LLM a dropped reply costs a request.
   */
  preemptive_replies: Type.Optional(Type.Boolean()),
  /** Custom fields the post-call analysis fills (with an LLM configured); [] = none. */
  post_call_analysis_data: Type.Optional(Type.Array(PostCallAnalysisField, { maxItems: MAX_ANALYSIS_FIELDS })),
  /**
   * Words and short phrases the recogniser should expect throughout the call (names, brands,
   * product terms), as Retell: up to 100, each 1-100 characters. They bias embedded recognition
   * and are passed to hosted recognisers that take keywords or a prompt (docs/voice-pipeline.md).
   */
  boosted_keywords: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }), { maxItems: 100 })),
  // --- issue 24: phone calls -------------------------------------------------------------------
  /** Whether keys the caller presses on a phone are taken as the caller's input (Retell's field; default true). */
  allow_user_dtmf: Type.Optional(Type.Boolean()),
  /**
   * How keypad input becomes one turn (Retell's shape): it ends at `termination_key` (not part of
   * the turn), at `digit_limit` digits, or `timeout_ms` after the last key. Defaults: `#`, 50, 2500.
   */
  user_dtmf_options: Type.Optional(
    Nullable(
      Strict({
        digit_limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
        termination_key: Type.Optional(Nullable(Type.String({ pattern: '^[0-9*#]$' }))),
        timeout_ms: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 15_000 })),
      }),
    ),
  ),
  // --- issue 26: Retell's agent fields (docs/retell.md)
  /**
   * Retell's agent-level events to send to `webhook_url` in Retell's shape, signed with
   * `x-retell-signature`; null (the default) sends `call.finished` there as before (docs/webhooks.md).
   */
  webhook_events: Type.Optional(
    Nullable(Type.Array(Type.Union(AGENT_EVENT_KINDS.map((kind) => Type.Literal(kind))), { maxItems: AGENT_EVENT_KINDS.length, uniqueItems: true })),
  ),
  /** What this version is, for the people who keep the agent (Retell's field); publish-agent-version may give another. */
  version_description: Type.Optional(Nullable(Type.String({ maxLength: 2_000 }))),
  /** Gain on the agent's speech, 0 to 2 (Retell's range; default 1), clipped at full scale (voice/volume.ts). */
  volume: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  /** Numbers, currencies, dates and times spoken as words before synthesis (English; voice/speech-normaliser.ts). Default false. */
  normalize_for_speech: Type.Optional(Type.Boolean()),
  /**
   * Retell's `opt_out_sensitive_data_storage`: true stores the agent's calls under
   * `basic_attributes_only` (no transcript, recording or PII), as `data_storage_setting` would.
   */
  opt_out_sensitive_data_storage: Type.Optional(Type.Boolean()),
  /** The agent's opening waits this long, ms (0 to 5000, default 0; voice/begin-delay.ts). Only when the agent speaks first. */
  begin_message_delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 5_000 })),
  // Retell's fields accepted, stored and answered, but without effect here: the answer lists
  // those set in `accepted_without_effect` (RETELL_AGENT_FIELDS_WITHOUT_EFFECT says why).
  /** Speaking rate, 0.5 to 2 (Retell's range; default 1): Flite's phone durations, a hosted voice's speed (docs/retell.md). */
  voice_speed: Type.Optional(Type.Number({ minimum: 0.5, maximum: 2 })),
  voice_temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  /** Words said as given in IPA or CMU ARPAbet (lib/phonemes.ts); pinyin and jyutping are kept, unread by English voices. */
  pronunciation_dictionary: Type.Optional(
    Nullable(
      Type.Array(
        Strict({
          word: Type.String({ minLength: 1, maxLength: 100 }),
          alphabet: Type.Union(['ipa', 'cmu', 'pinyin', 'jyutping'].map((a) => Type.Literal(a))),
          phoneme: Type.String({ minLength: 1, maxLength: 200 }),
        }),
        { maxItems: 200 },
      ),
    ),
  ),
  /** Short words ("okay", "uh-huh") said quietly while the caller speaks at length, out of the transcript (voice/backchannel.ts); default false. */
  enable_backchannel: Type.Optional(Type.Boolean()),
  backchannel_frequency: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  backchannel_words: Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 50 }))),
  ambient_sound: Type.Optional(
    Nullable(Type.Union(['coffee-shop', 'convention-hall', 'summer-outdoor', 'mountain-outdoor', 'static-noise', 'call-center'].map((a) => Type.Literal(a)))),
  ),
  ambient_sound_volume: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  fallback_voice_ids: Type.Optional(Nullable(Type.Array(Name(128), { maxItems: 10 }))),
  stt_mode: Type.Optional(Type.Union(['fast', 'accurate', 'custom'].map((m) => Type.Literal(m)))),
  /** Issue 24: answering-machine detection on outbound phone calls (voice/voicemail-detector.ts; docs/telephony.md). Default false. */
  enable_voicemail_detection: Type.Optional(Type.Boolean()),
  /** Issue 24: what the agent does on a machine (Retell's shape); null or absent: hang up. */
  voicemail_option: Type.Optional(Nullable(VoicemailOption)),
  /** Attempt timeout of deliveries to `webhook_url`, ms (1000 to 60000), capped at WEBHOOK_TIMEOUT_MS; absent: that (docs/webhooks.md). */
  webhook_timeout_ms: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 60_000 })),
  is_public: Type.Optional(Type.Boolean()),
  post_call_analysis_model: Type.Optional(Nullable(Name(64))),
  version_title: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  // --- issue 25: noise suppression ------------------------------------------------------------
  /**
   * Retell's `denoising_mode`: `noise-cancellation` suppresses the noise in the caller's audio
   * before the VAD and the recogniser hear it (RNNoise; docs/voice-pipeline.md); `no-denoise`
   * (the default here, chosen by measurement: BENCHMARKS.md) hears it as it came. The recording
   * keeps the caller's own audio either way.
   */
  denoising_mode: Type.Optional(Type.Union(DENOISING_MODES.map((m) => Type.Literal(m)))),
  // --- issue 24: voicemail detection ----------------------------------------------------------
  /** How long the detection listens after the answer, ms (Retell's range, 5000 to 180000; absent: 30000). */
  voicemail_detection_timeout_ms: Type.Optional(Type.Integer({ minimum: 5_000, maximum: 180_000 })),
  /** Retell's older field: the message left on a machine, when `voicemail_option` does not say (static text). */
  voicemail_message: Type.Optional(Nullable(Type.String({ maxLength: 2_000 }))),
};

/**
 * Retell's agent fields this server takes without effect, and why; an agent answer lists those
 * set (to anything but their neutral value) in `accepted_without_effect`, never silently.
 */
export const RETELL_AGENT_FIELDS_WITHOUT_EFFECT = {
  voice_temperature: 'no voice here has a variability control',
  ambient_sound: 'no ambient sound is mixed in',
  ambient_sound_volume: 'no ambient sound is mixed in',
  stt_mode: 'the recogniser has one mode',
  is_public: 'agents have no public page',
  post_call_analysis_model: 'the analysis runs on the configured LLM',
  version_title: 'titles are kept for publish-agent-version, as list-agent-versions shows them',
} as const;

/** The neutral value of a field without effect: set to it, the field is not reported. */
const NEUTRAL: Partial<Record<keyof typeof RETELL_AGENT_FIELDS_WITHOUT_EFFECT, unknown>> = { voice_temperature: 1, ambient_sound_volume: 1, stt_mode: 'fast' };

/** The fields of `config` accepted without effect, in a stable order (empty when none). */
export function agentFieldsWithoutEffect(config: Partial<AgentConfig>): string[] {
  return (Object.keys(RETELL_AGENT_FIELDS_WITHOUT_EFFECT) as Array<keyof typeof RETELL_AGENT_FIELDS_WITHOUT_EFFECT>).filter((field) => {
    const value = config[field];
    if (value === undefined || value === null || value === false || value === NEUTRAL[field]) return false;
    return !(Array.isArray(value) && value.length === 0);
  });
}

/**
 * Retell's `opt_out_sensitive_data_storage` as our storage policy: a config with it true stores
 * `basic_attributes_only`. Turning it off later keeps the policy (set `data_storage_setting`).
 * Returns the config, or a message naming both fields when `changes` asks for another policy.
 */
export function withStorageOptOut(config: AgentConfig, changes: { data_storage_setting?: StoragePolicy }): AgentConfig | string {
  if (!config.opt_out_sensitive_data_storage) return config;
  const asked = changes.data_storage_setting;
  if (asked !== undefined && asked !== 'basic_attributes_only') {
    return `opt_out_sensitive_data_storage is true, which stores basic_attributes_only, but data_storage_setting is ${asked}; send one`;
  }
  return { ...config, data_storage_setting: 'basic_attributes_only' };
}

export const AgentCreate = Strict({ response_engine: ResponseEngine, ...AgentSettings });
export type AgentCreate = Static<typeof AgentCreate>;
export const AgentUpdate = Strict({ response_engine: Type.Optional(ResponseEngine), ...AgentSettings });
export type AgentUpdate = Static<typeof AgentUpdate>;
export const AgentSettingsOverride = Strict(AgentSettings);

export const AgentOverride = Strict({
  agent: Type.Optional(AgentSettingsOverride),
  service_llm: Type.Optional(ServiceLlmOverride),
  conversation_flow: Type.Optional(ConversationFlowOverride),
});
export type AgentOverride = Static<typeof AgentOverride>;

/** An agent version's fields with every default filled in. */
export interface AgentConfig {
  agent_name: string | null;
  response_engine: ResponseEngine;
  voice_id: string;
  language: string;
  webhook_url: string | null;
  data_storage_setting: StoragePolicy;
  max_call_duration_ms: number;
  end_call_after_silence_ms: number;
  reminder_trigger_ms: number;
  reminder_max_count: number;
  interruption_sensitivity: number;
  responsiveness: number;
  end_of_turn_min_silence_ms: number;
  end_of_turn_max_silence_ms: number;
  preemptive_replies: boolean;
  post_call_analysis_data: PostCallAnalysisField[];
  boosted_keywords: string[];
  // issue 24
  allow_user_dtmf: boolean;
  user_dtmf_options: UserDtmfOptions | null;
  // issue 26
  webhook_events: AgentEventKind[] | null;
  version_description: string | null;
  volume: number;
  normalize_for_speech: boolean;
  opt_out_sensitive_data_storage: boolean;
  voice_speed: number;
  pronunciation_dictionary: Array<{ word: string; alphabet: string; phoneme: string }> | null;
  // issue 25
  denoising_mode: DenoisingMode;
  // Accepted without effect (RETELL_AGENT_FIELDS_WITHOUT_EFFECT); absent when never set.
  voice_temperature?: number;
  begin_message_delay_ms?: number;
  // Backchannels (voice/backchannel.ts); absent when never set.
  enable_backchannel?: boolean;
  backchannel_frequency?: number;
  backchannel_words?: string[] | null;
  ambient_sound?: string | null;
  ambient_sound_volume?: number;
  fallback_voice_ids?: string[] | null;
  stt_mode?: string;
  enable_voicemail_detection?: boolean;
  voicemail_option?: VoicemailOptionValue | null;
  voicemail_detection_timeout_ms?: number;
  voicemail_message?: string | null;
  webhook_timeout_ms?: number;
  is_public?: boolean;
  post_call_analysis_model?: string | null;
  version_title?: string | null;
}

/** Retell's `user_dtmf_options`: how keypad input becomes one turn (issue 24). */
export interface UserDtmfOptions {
  digit_limit?: number;
  termination_key?: string | null;
  timeout_ms?: number;
}

export const AGENT_DEFAULTS = {
  agent_name: null,
  voice_id: 'flite-kal16',
  language: 'en-US',
  webhook_url: null,
  data_storage_setting: 'everything',
  max_call_duration_ms: 3_600_000,
  end_call_after_silence_ms: 600_000,
  reminder_trigger_ms: 10_000,
  reminder_max_count: 1,
  interruption_sensitivity: 1,
  responsiveness: 1,
  end_of_turn_min_silence_ms: 250,
  end_of_turn_max_silence_ms: 1_200,
  preemptive_replies: true,
  // Never mutated: configs are replaced whole.
  post_call_analysis_data: [] as PostCallAnalysisField[],
  boosted_keywords: [],
  // issue 24
  allow_user_dtmf: true,
  user_dtmf_options: null,
  webhook_events: null,
  version_description: null,
  volume: 1,
  normalize_for_speech: false,
  opt_out_sensitive_data_storage: false,
  begin_message_delay_ms: 0,
  voice_speed: 1,
  pronunciation_dictionary: null,
  // issue 25
  denoising_mode: 'no-denoise',
} as const satisfies Omit<AgentConfig, 'response_engine'>;

/** The response engine's definition as pinned by an agent version. */
export type EngineSnapshot =
  | { type: 'conversation_flow'; conversation_flow_id: string; definition: ConversationFlowDefinition }
  | { type: 'service_llm'; llm_id: string; definition: ServiceLlmDefinition }
  /** A custom LLM has no stored definition: the user's server is the engine. */
  | { type: 'custom_llm'; llm_websocket_url: string; knowledge_base_ids?: string[]; kb_config?: KbConfig };

/**
 * A call's agent settings: the version's `config` with the call's `agent_override.agent` applied
 * (a field given replaces the version's; one left out or undefined keeps it). The one statement of
 * this merge: the call service stores from it, the call session runs from it.
 */
export function settingsWithOverride(config: AgentConfig, override: AgentOverride | null | undefined): AgentConfig {
  return { ...config, ...withoutUndefined(override?.agent ?? {}) };
}

/**
 * A call's engine definition: the version's with the call's `agent_override.conversation_flow` or
 * `agent_override.service_llm` applied, field by field as {@link settingsWithOverride} does. A
 * custom LLM has no definition to override.
 */
export function engineWithOverride(engine: EngineSnapshot, override: AgentOverride | null | undefined): EngineSnapshot {
  if (engine.type === 'custom_llm') return engine;
  if (engine.type === 'conversation_flow') {
    return { ...engine, definition: { ...engine.definition, ...withoutUndefined(override?.conversation_flow ?? {}) } };
  }
  return { ...engine, definition: { ...engine.definition, ...withoutUndefined(override?.service_llm ?? {}) } };
}

/** An agent's head: its owner and latest version. */
export interface AgentHead {
  id: string;
  account_id: string;
  latest_version: number;
  created_at: number;
  updated_at: number;
}

/** One immutable version of an agent: its settings and the engine definition it pinned. */
export interface AgentVersion {
  agent_id: string;
  version: number;
  config: AgentConfig;
  engine: EngineSnapshot;
  /** Epoch ms; the agent's last modification as of this version. */
  created_at: number;
}

/** A stored conversation flow or service LLM. */
export interface EngineRecord<Definition> {
  id: string;
  account_id: string;
  definition: Definition;
  created_at: number;
  updated_at: number;
}

/** A stored config with the fields added since it was stored filled in with their defaults. */
export function completeAgentConfig(stored: AgentConfig): AgentConfig {
  return { ...AGENT_DEFAULTS, ...stored };
}

/**
 * Fields that take effect but have no default: absent, the server's own setting applies
 * (webhook_timeout_ms: WEBHOOK_TIMEOUT_MS; the backchannel fields: none, Retell's frequency and
 * words; the voicemail fields: no detection; fallback_voice_ids: none, issue 26).
 */
const AGENT_FIELDS_WITHOUT_DEFAULT: ReadonlySet<string> = new Set(['webhook_timeout_ms', 'enable_backchannel', 'backchannel_frequency', 'backchannel_words', ...VOICEMAIL_FIELDS, 'fallback_voice_ids']);

/** Merges fields given (undefined = keep) over a base config. */
export function mergeAgentConfig(base: AgentConfig, changes: Partial<Record<keyof AgentConfig, unknown>>): AgentConfig {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(changes)) {
    if (value !== undefined && (key in AGENT_DEFAULTS || key in RETELL_AGENT_FIELDS_WITHOUT_EFFECT || AGENT_FIELDS_WITHOUT_DEFAULT.has(key))) merged[key] = value;
    if (key === 'response_engine' && value !== undefined) merged[key] = value;
  }
  return merged as unknown as AgentConfig;
}
