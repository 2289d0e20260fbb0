/**
 * list-calls' `filter_criteria`, in both of the shapes clients send: the first one of this API
 * (and of Retell's v2 list-calls: arrays of values, `{lower_threshold, upper_threshold}`), and
 * Retell SDK 5's (`agent: [{agent_id, version?}]`, `{op: "in", type: "enum", value: [...]}`,
 * `{op, type: "number", value}`, `{op: "bt", type: "range", value: [lower, upper]}`,
 * `{op: "eq", type: "boolean", value}`). Every condition is ANDed; the values of one condition
 * are ORed. `toCallFilter` turns either shape into the repository's one.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CALL_DIRECTIONS, CALL_TYPES, type CallDirection, type CallType } from '../domain/call.ts';
import { CALL_STATUSES, DISCONNECTION_REASONS, type CallStatus, type DisconnectionReason } from '../domain/call-status.ts';
import { errors } from '../domain/errors.ts';
import { MAX_EPOCH_MS, ResourceId, Strict } from '../domain/schema-kit.ts';
import type { CallFilter, NumberCondition } from '../storage/call.repository.ts';

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

/** A list of values, or SDK 5's `{op: "in", type: "enum", value: [...]}`: the call matches one of them. */
const OneOf = <T extends TSchema>(item: T, maxItems: number) =>
  Type.Union([
    Type.Array(item, { maxItems }),
    Strict({ op: Type.Literal('in'), type: Type.Literal('enum'), value: Type.Array(item, { maxItems }) }),
  ]);

/** Epoch ms and durations alike: whole milliseconds within every store's bigint. */
const Bound = Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS });
const NUMBER_OPS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le'] as const;

/** `{lower_threshold, upper_threshold}` (inclusive), `{op, type: "number", value}` or `{op: "bt", type: "range", value: [lower, upper]}` (inclusive). */
const NumberFilter = Type.Union([
  Strict({ lower_threshold: Type.Optional(Bound), upper_threshold: Type.Optional(Bound) }),
  Strict({ op: literals(NUMBER_OPS), type: Type.Literal('number'), value: Bound }),
  Strict({ op: Type.Literal('bt'), type: Type.Literal('range'), value: Type.Array(Bound, { minItems: 2, maxItems: 2, description: '[lower, upper], both included.' }) }),
]);

export const CallFilterCriteria = Strict({
  agent_id: Type.Optional(Type.Array(ResourceId, { maxItems: 100, description: 'The calls of these agents (any version).' })),
  agent: Type.Optional(
    Type.Array(
      Strict({
        agent_id: ResourceId,
        version: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: 1_000_000_000 }), { maxItems: 100, description: 'Omitted or empty: every version.' })),
      }),
      { maxItems: 100, description: "Retell SDK 5's agent filter: the calls of any of these agents (and versions)." },
    ),
  ),
  call_status: Type.Optional(OneOf(literals(CALL_STATUSES), CALL_STATUSES.length)),
  call_type: Type.Optional(OneOf(literals(CALL_TYPES), CALL_TYPES.length)),
  direction: Type.Optional(OneOf(literals(CALL_DIRECTIONS), CALL_DIRECTIONS.length)),
  disconnection_reason: Type.Optional(OneOf(literals(DISCONNECTION_REASONS), DISCONNECTION_REASONS.length)),
  call_successful: Type.Optional(
    Type.Union(
      [
        Type.Array(Type.Boolean(), { maxItems: 2 }),
        Strict({ op: Type.Literal('eq'), type: Type.Literal('boolean'), value: Type.Boolean() }),
      ],
      { description: "Keeps the calls whose `call_analysis.call_successful` is one of these; calls without an analysis never match." },
    ),
  ),
  start_timestamp: Type.Optional(NumberFilter),
  end_timestamp: Type.Optional(NumberFilter),
  duration_ms: Type.Optional(NumberFilter),
  query: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[^\\u0000]+$',
      description:
        'Text search, in any case: keeps the calls whose `call_id`, `transcript` or one of the top-level `metadata` values contains it. It reads every call of the account in the other filters\' range.',
    }),
  ),
});
export type CallFilterCriteria = Static<typeof CallFilterCriteria>;

type Listed<T> = T[] | { value: T[] };
type NumberFilter = Static<typeof NumberFilter>;

/** The repository's filter for `criteria`; a range whose lower bound is above its upper one is a 400 naming the field. */
export function toCallFilter(criteria: CallFilterCriteria | undefined): CallFilter {
  if (!criteria) return {};
  const successful = criteria.call_successful;
  return {
    agentIds: criteria.agent_id,
    agents: criteria.agent?.map((a) => ({ agentId: a.agent_id, ...(a.version?.length ? { versions: a.version } : {}) })),
    statuses: values<CallStatus>(criteria.call_status),
    types: values<CallType>(criteria.call_type),
    directions: values<CallDirection>(criteria.direction),
    reasons: values<DisconnectionReason>(criteria.disconnection_reason),
    successful: successful === undefined ? undefined : Array.isArray(successful) ? successful : [successful.value],
    startTimestamp: conditions('start_timestamp', criteria.start_timestamp),
    endTimestamp: conditions('end_timestamp', criteria.end_timestamp),
    durationMs: conditions('duration_ms', criteria.duration_ms),
    text: criteria.query,
  };
}

function values<T>(listed: Listed<T> | undefined): T[] | undefined {
  if (listed === undefined) return undefined;
  return Array.isArray(listed) ? listed : listed.value;
}

function conditions(field: string, filter: NumberFilter | undefined): NumberCondition[] | undefined {
  if (filter === undefined) return undefined;
  if (!('op' in filter)) {
    const { lower_threshold: lower, upper_threshold: upper } = filter;
    return [...(lower === undefined ? [] : [{ op: 'ge' as const, value: lower }]), ...(upper === undefined ? [] : [{ op: 'le' as const, value: upper }])];
  }
  if (filter.op !== 'bt') return [{ op: filter.op, value: filter.value }];
  const [lower = 0, upper = 0] = filter.value;
  if (lower > upper) throw errors.invalidRequest(`filter_criteria.${field}: a range's value is [lower, upper] with lower <= upper`);
  return [{ op: 'ge', value: lower }, { op: 'le', value: upper }];
}
