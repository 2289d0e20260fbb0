/**
 * A new call's record, as create-web-call and a transport's admission make it: checked against
 * its agent (nodes, states, engine-specific fields, the override's settings, what this server can
 * run) and filled with the effective settings. One place, so a web call and an admitted call are
 * made by the same rules.
 */
import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { newId } from '../lib/ids.ts';
import { jsonByteLength } from '../lib/json.ts';
import { errors } from '../domain/errors.ts';
import { type AgentOverride, settingsWithOverride } from '../domain/agent.ts';
import type { Call, CallType, PhoneCallFields } from '../domain/call.ts';
import type { AgentService, ResolvedAgentVersion } from './agent.service.ts';
import type { CreateWebCallBody } from './call.schemas.ts';

/** Largest `metadata` accepted: 50 KB read as 50 × 1024 bytes of its UTF-8 JSON text. */
export const METADATA_MAX_BYTES = 51_200;

/** What a new call is made from: create-web-call's body (a transport's admission gives the same fields). */
export type NewCallInput = Static<typeof CreateWebCallBody>;

/** Checks, at creation, that this server can run the agent's engine (e.g. an LLM is configured). */
export type EngineCapabilityCheck = (agent: ResolvedAgentVersion, override: AgentOverride | undefined) => string | null;
/** The server's room for one more call's recogniser stream (SttProvider.capacity); undefined: no bound. */
export type RecogniserCapacity = () => { open: number; max: number } | undefined;

export interface NewCallOptions {
  callType: CallType;
  /** When the call's access token expires, epoch ms. */
  tokenExpiresAt: number;
  /** A phone call's fields (issue 24). */
  phone?: PhoneCallFields | undefined;
}

/** A new call's record on `agent` (status `registered`); throws AppError when the input does not fit the agent. */
export function newCallRecord(
  deps: { agents: Pick<AgentService, 'checkCallSettings'>; checkEngine?: EngineCapabilityCheck | undefined; recogniserCapacity?: RecogniserCapacity | undefined },
  accountId: string,
  input: NewCallInput,
  agent: ResolvedAgentVersion,
  now: number,
  options: NewCallOptions,
): Call {
  checkCallInput(agent, input);
  deps.agents.checkCallSettings(agent, input.agent_override?.agent);
  const capability = deps.checkEngine?.(agent, input.agent_override);
  if (capability) throw errors.invalidRequest(capability);
  // A call the embedded recogniser has no room for is refused now, not cut off when it joins.
  const room = deps.recogniserCapacity?.();
  if (room && room.open >= room.max) throw errors.recogniserFull(room.open, room.max);

  const settings = settingsWithOverride(agent.config, input.agent_override);
  return {
    call_id: newId('call'),
    account_id: accountId,
    call_type: options.callType,
    agent_id: agent.agentId,
    agent_version: agent.version,
    agent_name: settings.agent_name ?? null,
    call_status: 'registered',
    data_storage_setting: settings.data_storage_setting,
    created_at: now,
    start_timestamp: null,
    end_timestamp: null,
    duration_ms: null,
    disconnection_reason: null,
    metadata: input.metadata ?? {},
    agent_override: input.agent_override ?? null,
    service_llm_dynamic_variables: input.service_llm_dynamic_variables ?? {},
    override_dynamic_variables: null,
    custom_attributes: null,
    current_node_id: input.current_node_id ?? null,
    current_state: input.current_state ?? null,
    transcript: null,
    transcript_object: null,
    transcript_with_tool_calls: null,
    recording_path: null,
    call_analysis: null,
    latency: null,
    media: null,
    from_number: options.phone?.from_number ?? null,
    to_number: options.phone?.to_number ?? null,
    direction: options.phone?.direction ?? null,
    telephony_identifier: options.phone?.telephony_identifier ?? null,
    transfer_destination: null,
    token_id: randomUUID().slice(0, 13),
    token_expires_at: options.tokenExpiresAt,
    token_used_at: null,
    updated_at: now,
  };
}

/** Rules of the spec that need the agent: node and state names, engine-specific fields, metadata's size. */
function checkCallInput(agent: ResolvedAgentVersion, input: NewCallInput): void {
  const engine = agent.engine;
  if (input.current_node_id !== undefined) {
    if (engine.type !== 'conversation_flow') {
      throw errors.invalidRequest('current_node_id applies only to agents whose response engine is a conversation flow');
    }
    if (!engine.definition.nodes.some((node) => node.id === input.current_node_id)) {
      throw errors.invalidRequest(`current_node_id "${input.current_node_id}" is not a node of the agent's conversation flow`);
    }
  }
  if (input.current_state !== undefined) {
    if (engine.type !== 'service_llm') {
      throw errors.invalidRequest('current_state applies only to agents whose response engine is a service LLM');
    }
    if (!(engine.definition.states ?? []).some((state) => state.name === input.current_state)) {
      throw errors.invalidRequest(`current_state "${input.current_state}" is not a state of the agent's service LLM`);
    }
  }
  if (input.agent_override?.conversation_flow !== undefined && engine.type !== 'conversation_flow') {
    throw errors.invalidRequest('agent_override.conversation_flow applies only to conversation-flow agents');
  }
  if (input.agent_override?.service_llm !== undefined && engine.type !== 'service_llm') {
    throw errors.invalidRequest('agent_override.service_llm applies only to service-LLM agents');
  }
  if (input.metadata !== undefined && jsonByteLength(input.metadata) > METADATA_MAX_BYTES) {
    throw errors.invalidRequest(`metadata is larger than 50 KB (${METADATA_MAX_BYTES} bytes of UTF-8 JSON)`);
  }
}
