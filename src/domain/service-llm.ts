import { Type, type Static } from '@sinclair/typebox';
import { ModelTemperature, SilenceMs, StartSpeaker } from './conversation-flow.ts';
import { LlmTool, checkFunctions } from './custom-function.ts';
import { Name, Strict, StringMap, Text } from './schema-kit.ts';
import { KbConfig, KnowledgeBaseIds } from './knowledge-base.ts';

/** State names become tool names (`transition_to_<state>`), so they keep to tool-name characters. */
const StateName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

export const LlmStateEdge = Strict({ destination_state_name: StateName, description: Type.Optional(Text(4096)) });
export const LlmState = Strict({
  name: StateName,
  state_prompt: Type.Optional(Text()),
  edges: Type.Optional(Type.Array(LlmStateEdge, { maxItems: 50 })),
  /** Custom functions (and Retell's `end_call` and `transfer_call` tools) the model may call in this state only. */
  tools: Type.Optional(Type.Array(LlmTool, { maxItems: 50 })),
});

/** The tunables of a service LLM: what `agent_override.service_llm` may change for one call. */
export const ServiceLlmSettings = {
  general_prompt: Type.Optional(Text()),
  begin_message: Type.Optional(Text(4096)),
  model: Type.Optional(Name(128)),
  model_temperature: Type.Optional(ModelTemperature),
  start_speaker: Type.Optional(StartSpeaker),
  begin_after_user_silence_ms: Type.Optional(SilenceMs),
};

export const ServiceLlmDefinition = Strict({
  ...ServiceLlmSettings,
  states: Type.Optional(Type.Array(LlmState, { maxItems: 100 })),
  /** Custom functions (and Retell's `end_call` and `transfer_call` tools) the model may call in every state. */
  general_tools: Type.Optional(Type.Array(LlmTool, { maxItems: 50 })),
  starting_state: Type.Optional(StateName),
  default_dynamic_variables: Type.Optional(StringMap),
  // Issue 29: knowledge bases retrieved from before every response (docs/knowledge-bases.md).
  knowledge_base_ids: Type.Optional(KnowledgeBaseIds),
  kb_config: Type.Optional(KbConfig),
  // --- issue 26: Retell's LLM fields (docs/retell.md)
  /** Custom functions are offered to the model with `strict: true` (the model's arguments follow their schema exactly). */
  tool_call_strict_mode: Type.Optional(Type.Boolean()),
  /** Accepted and reported (RETELL_LLM_FIELDS_WITHOUT_EFFECT): a faster tier of Retell's hosted models. */
  model_high_priority: Type.Optional(Type.Boolean()),
  /** Accepted and reported: Retell's speech-to-speech models. */
  s2s_model: Type.Optional(Type.Union([Name(128), Type.Null()])),
});
export type ServiceLlmDefinition = Static<typeof ServiceLlmDefinition>;
export type LlmState = Static<typeof LlmState>;

/**
 * Retell's LLM fields this server stores and answers but that change nothing in a call, and why;
 * a service LLM's answer lists the ones it holds under `accepted_without_effect`.
 */
export const RETELL_LLM_FIELDS_WITHOUT_EFFECT = {
  model_high_priority: "a priority tier of Retell's hosted models; the configured model is used as it is",
  s2s_model: "Retell's speech-to-speech models do not exist here; the recogniser, the model and the voice are separate",
} as const;

/** The fields of `definition` that are accepted without effect, in a stable order (empty when none). */
export function llmFieldsWithoutEffect(definition: ServiceLlmDefinition): string[] {
  return Object.keys(RETELL_LLM_FIELDS_WITHOUT_EFFECT).filter((field) => {
    const value = (definition as Record<string, unknown>)[field];
    return value !== undefined && value !== null && value !== false && !(Array.isArray(value) && value.length === 0);
  });
}

export const ServiceLlmOverride = Strict(ServiceLlmSettings);
export type ServiceLlmOverride = Static<typeof ServiceLlmOverride>;

/**
 * Unique state names, edges to existing states, a starting state that exists; functions
 * (`general_tools`, `states[].tools`) with names unique among those the model sees in a state,
 * free of the service's own tools, and compilable parameters. Null when all is well.
 */
export function checkLlmStates(llm: ServiceLlmDefinition): string | null {
  const general = llm.general_tools ?? [];
  const generalProblem = checkFunctions(general, 'general_tools');
  if (generalProblem) return generalProblem;
  const generalNames = new Set(general.map((f) => f.name));
  for (const [i, state] of (llm.states ?? []).entries()) {
    const problem = checkFunctions(state.tools ?? [], `states[${i}].tools`, generalNames);
    if (problem) return problem;
    const endCalls = [...general, ...(state.tools ?? [])].filter((t) => t.type === 'end_call').length;
    if (endCalls > 1) return `states[${i}]: at most one end_call tool in a state (general_tools included)`;
  }
  if (general.filter((t) => t.type === 'end_call').length > 1) return 'general_tools: at most one end_call tool';
  const names = new Set<string>();
  for (const state of llm.states ?? []) {
    if (names.has(state.name)) return `duplicate state name "${state.name}"`;
    names.add(state.name);
  }
  for (const state of llm.states ?? []) {
    for (const edge of state.edges ?? []) {
      if (!names.has(edge.destination_state_name)) {
        return `state "${state.name}" has an edge to unknown state "${edge.destination_state_name}"`;
      }
    }
  }
  if (llm.starting_state !== undefined && !names.has(llm.starting_state)) {
    return `starting_state "${llm.starting_state}" is not a state of the LLM`;
  }
  return null;
}
