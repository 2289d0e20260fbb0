/** The call operations' request shapes; services derive their input types from them. */
import { Type, type Static } from '@sinclair/typebox';
import { AgentOverride, StoragePolicySchema } from '../domain/agent.ts';
import { CALL_STATUSES, DISCONNECTION_REASONS } from '../domain/call-status.ts';
import { EpochMs, FreeObject, ResourceId, StringMap, Strict } from '../domain/schema-kit.ts';

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

const CallStatusSchema = Type.Union(CALL_STATUSES.map((s) => Type.Literal(s)));
const DisconnectionReasonSchema = Type.Union(DISCONNECTION_REASONS.map((r) => Type.Literal(r)));

export const ListCallsBody = Strict({
  filter_criteria: Type.Optional(
    Strict({
      agent_id: Type.Optional(Type.Array(ResourceId, { maxItems: 100 })),
      call_status: Type.Optional(Type.Array(CallStatusSchema, { maxItems: 4 })),
      start_timestamp: Type.Optional(
        Strict({
          lower_threshold: Type.Optional(EpochMs()),
          upper_threshold: Type.Optional(EpochMs()),
        }),
      ),
      disconnection_reason: Type.Optional(Type.Array(DisconnectionReasonSchema, { maxItems: DISCONNECTION_REASONS.length })),
      call_successful: Type.Optional(
        Type.Array(Type.Boolean(), {
          maxItems: 2,
          description: "Keeps the calls whose `call_analysis.call_successful` is one of these; calls without an analysis never match.",
        }),
      ),
      query: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 256,
          pattern: '^[^\\u0000]+$',
          description:
            'Text search, in any case: keeps the calls whose `call_id`, `transcript` or one of the top-level `metadata` values contains it. It reads every call of the account in the other filters\' range.',
        }),
      ),
    }),
  ),
  sort_order: Type.Optional(Type.Union([Type.Literal('ascending'), Type.Literal('descending')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  pagination_key: Type.Optional(ResourceId),
});
export type ListCallsBody = Static<typeof ListCallsBody>;

