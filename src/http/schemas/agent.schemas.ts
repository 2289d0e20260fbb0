import { Type } from '@sinclair/typebox';
import { AgentCreate, AgentUpdate, PostCallAnalysisField, ResponseEngine } from '../../domain/agent.ts';
import { NullableString, Strict, StringEnum } from '../../domain/schema-kit.ts';
import { STORAGE_POLICIES } from '../../domain/storage-policy.ts';
import { ConversationFlowDefinition } from '../../domain/conversation-flow.ts';
import { ServiceLlmDefinition } from '../../domain/service-llm.ts';
import { KbConfig } from '../../domain/knowledge-base.ts';
import { AnyJson, named } from './common.schemas.ts';

const Timestamps = {
  created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
  last_modification_timestamp: Type.Integer({ description: 'Epoch milliseconds.' }),
};

export const ConversationFlowCreateBody = named(ConversationFlowDefinition, 'CreateConversationFlowRequest');
export const ConversationFlowUpdateBody = named(Type.Partial(ConversationFlowDefinition, { additionalProperties: false }), 'UpdateConversationFlowRequest');
/** Responses echo the stored definition; nested parts are serialised as stored. */
export const ConversationFlowResponse = Type.Object(
  {
    conversation_flow_id: Type.String(),
    name: Type.Optional(Type.String()),
    start_node_id: Type.String(),
    nodes: Type.Array(AnyJson),
    global_prompt: Type.Optional(Type.String()),
    default_dynamic_variables: Type.Optional(AnyJson),
    start_speaker: Type.Optional(Type.String()),
    model: Type.Optional(Type.String()),
    model_temperature: Type.Optional(Type.Number()),
    begin_after_user_silence_ms: Type.Optional(Type.Integer()),
    knowledge_base_ids: Type.Optional(Type.Array(Type.String())),
    kb_config: Type.Optional(KbConfig),
    ...Timestamps,
  },
  { title: 'ConversationFlow' },
);

export const ServiceLlmCreateBody = named(ServiceLlmDefinition, 'CreateServiceLlmRequest');
export const ServiceLlmUpdateBody = named(Type.Partial(ServiceLlmDefinition, { additionalProperties: false }), 'UpdateServiceLlmRequest');
export const ServiceLlmResponse = Type.Object(
  {
    llm_id: Type.String(),
    general_prompt: Type.Optional(Type.String()),
    begin_message: Type.Optional(Type.String()),
    model: Type.Optional(Type.String()),
    model_temperature: Type.Optional(Type.Number()),
    start_speaker: Type.Optional(Type.String()),
    begin_after_user_silence_ms: Type.Optional(Type.Integer()),
    states: Type.Optional(Type.Array(AnyJson)),
    starting_state: Type.Optional(Type.String()),
    default_dynamic_variables: Type.Optional(AnyJson),
    general_tools: Type.Optional(Type.Array(AnyJson)),
    tool_call_strict_mode: Type.Optional(Type.Boolean()),
    model_high_priority: Type.Optional(Type.Boolean()),
    knowledge_base_ids: Type.Optional(Type.Array(Type.String())),
    kb_config: Type.Optional(KbConfig),
    s2s_model: Type.Optional(NullableString()),
    accepted_without_effect: Type.Array(Type.String(), { description: "Retell's fields this LLM holds that change nothing on this server (docs/retell.md)." }),
    ...Timestamps,
  },
  { title: 'ServiceLlm' },
);

export const AgentCreateBody = named(AgentCreate, 'CreateAgentRequest');
export const AgentUpdateBody = named(AgentUpdate, 'UpdateAgentRequest');
export const AgentResponse = Type.Object(
  {
    agent_id: Type.String(),
    version: Type.Integer({ minimum: 1 }),
    agent_name: NullableString(),
    response_engine: ResponseEngine,
    voice_id: Type.String(),
    language: Type.String(),
    webhook_url: NullableString(),
    data_storage_setting: StringEnum(STORAGE_POLICIES),
    max_call_duration_ms: Type.Integer(),
    end_call_after_silence_ms: Type.Integer(),
    /** Absent on versions saved before the fields existed (which take the defaults, 10 s and 1). */
    reminder_trigger_ms: Type.Optional(Type.Integer()),
    reminder_max_count: Type.Optional(Type.Integer()),
    interruption_sensitivity: Type.Number(),
    responsiveness: Type.Number(),
    end_of_turn_min_silence_ms: Type.Integer(),
    end_of_turn_max_silence_ms: Type.Integer(),
    preemptive_replies: Type.Boolean(),
    post_call_analysis_data: Type.Array(PostCallAnalysisField),
    /** Absent on versions saved before the field existed (which boost nothing). */
    boosted_keywords: Type.Optional(Type.Array(Type.String())),
    /** Absent on versions saved before the fields existed (which take the defaults). */
    allow_user_dtmf: Type.Optional(Type.Boolean()),
    user_dtmf_options: AgentCreate.properties.user_dtmf_options,
    webhook_events: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    version_description: Type.Optional(NullableString()),
    volume: Type.Optional(Type.Number()),
    normalize_for_speech: Type.Optional(Type.Boolean()),
    opt_out_sensitive_data_storage: Type.Optional(Type.Boolean()),
    voice_speed: Type.Optional(Type.Number()),
    voice_temperature: Type.Optional(Type.Number()),
    begin_message_delay_ms: Type.Optional(Type.Integer()),
    pronunciation_dictionary: Type.Optional(Type.Union([Type.Array(Type.Object({ word: Type.String(), alphabet: Type.String(), phoneme: Type.String() })), Type.Null()])),
    enable_backchannel: Type.Optional(Type.Boolean()),
    backchannel_frequency: Type.Optional(Type.Number()),
    backchannel_words: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    ambient_sound: Type.Optional(NullableString()),
    ambient_sound_volume: Type.Optional(Type.Number()),
    fallback_voice_ids: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    stt_mode: Type.Optional(Type.String()),
    enable_voicemail_detection: Type.Optional(Type.Boolean()),
    voicemail_option: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
    webhook_timeout_ms: Type.Optional(Type.Integer()),
    is_public: Type.Optional(Type.Boolean()),
    post_call_analysis_model: Type.Optional(NullableString()),
    version_title: Type.Optional(NullableString()),
    /** Issue 25: always answered (versions saved before the field take the default). */
    denoising_mode: Type.Optional(Type.String()),
    /** Issue 24: voicemail detection (answered when set). */
    voicemail_detection_timeout_ms: Type.Optional(Type.Integer()),
    voicemail_message: Type.Optional(NullableString()),
    accepted_without_effect: Type.Optional(
      Type.Array(Type.String(), { description: "Retell's agent fields set on this version that change nothing here (docs/retell.md says why for each)." }),
    ),
    ...Timestamps,
  },
  { title: 'Agent' },
);

export const VersionQuery = Type.Object(
  { version: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'An agent version number.' })) },
  { additionalProperties: false },
);

export const PublishAgentVersionBody = Strict(
  {
    version: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
    version_title: Type.Optional(Type.String({ maxLength: 256 })),
    version_description: Type.Optional(Type.String({ maxLength: 2_000 })),
  },
  { title: 'PublishAgentVersionRequest' },
);

export const CreateAgentVersionBody = Strict(
  { base_version: Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'The version to copy.' }) },
  { title: 'CreateAgentVersionRequest' },
);

export const AgentVersionSummary = Type.Object(
  {
    version: Type.Integer({ minimum: 1 }),
    is_published: Type.Boolean(),
    last_modification_timestamp: Type.Integer(),
    base_version: Type.Optional(Type.Integer({ minimum: 1 })),
    version_title: Type.Optional(Type.String()),
    version_description: Type.Optional(Type.String()),
  },
  { title: 'AgentVersionSummary' },
);
