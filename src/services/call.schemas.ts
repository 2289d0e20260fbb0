/** The call operations' request shapes; services derive their input types from them. */
import { Type, type Static } from '@sinclair/typebox';
import { AgentOverride, StoragePolicySchema } from '../domain/agent.ts';
import { FreeObject, ResourceId, StringMap, Strict } from '../domain/schema-kit.ts';
import { CallFilterCriteria } from './call-filters.ts';

export const CreateWebCallBody = Strict({
  agent_id: ResourceId,
  agent_version: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
  agent_override: Type.Optional(AgentOverride),
  metadata: Type.Optional(FreeObject),
  service_llm_dynamic_variables: Type.Optional(StringMap),
  current_node_id: Type.Optional(ResourceId),
  current_state: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
export type CreateWebCallBody = Static<typeof CreateWebCallBody>;

export const CustomAttributes = Type.Record(
  Type.String({ minLength: 1, maxLength: 128 }),
  Type.Union([Type.String({ maxLength: 8192 }), Type.Number(), Type.Boolean()]),
  { maxProperties: 200 },
);

export const UpdateCallBody = Strict({
  metadata: Type.Optional(FreeObject),
  data_storage_setting: Type.Optional(StoragePolicySchema),
  override_dynamic_variables: Type.Optional(Type.Union([StringMap, Type.Null()])),
  custom_attributes: Type.Optional(CustomAttributes),
});
export type UpdateCallBody = Static<typeof UpdateCallBody>;

export const ListCallsBody = Strict({
  filter_criteria: Type.Optional(CallFilterCriteria),
  sort_order: Type.Optional(Type.Union([Type.Literal('ascending'), Type.Literal('descending')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  pagination_key: Type.Optional(ResourceId),
});
export type ListCallsBody = Static<typeof ListCallsBody>;

