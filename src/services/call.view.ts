import { Type, type Static } from '@sinclair/typebox';
import { NullableInteger, NullableString, StringEnum } from '../domain/schema-kit.ts';
import { CALL_DIRECTIONS, CALL_TYPES, type Call, type CallMedia } from '../domain/call.ts';
import { CALL_STATUSES } from '../domain/call-status.ts';
import { STORAGE_POLICIES } from '../domain/storage-policy.ts';

const AnyJson = Type.Any();
const NullableInt = NullableInteger();
const NullableText = NullableString();

/** The call object of the API: every field of the spec is always present (null until known). */
export const CallResponse = Type.Object(
  {
    call_id: Type.String(),
    call_type: StringEnum(CALL_TYPES, { description: '`web_call` for calls created with create-web-call; `phone_call` for calls a phone transport admitted.' }),
    access_token: Type.Optional(Type.String({ description: 'Only in the creation response.' })),
    agent_id: Type.String(),
    agent_version: Type.Integer(),
    agent_name: NullableText,
    call_status: StringEnum(CALL_STATUSES),
    start_timestamp: NullableInt,
    end_timestamp: NullableInt,
    duration_ms: NullableInt,
    transcript: NullableText,
    transcript_object: AnyJson,
    transcript_with_tool_calls: AnyJson,
    recording_url: NullableText,
    disconnection_reason: NullableText,
    call_analysis: AnyJson,
    metadata: AnyJson,
    latency: AnyJson,
    media: Type.Unsafe<CallMedia | null>({
      ...Type.Union([
        Type.Object({
          transport: Type.String(),
          codec: Type.String(),
          sample_rate: Type.Integer(),
          bytes_in: NullableInt,
          bytes_out: NullableInt,
          packets_in: NullableInt,
          packets_out: NullableInt,
          packets_lost: NullableInt,
          jitter_ms: Type.Union([Type.Number(), Type.Null()]),
        }),
        Type.Null(),
      ]),
      description: 'How the call was carried, filled when it ends: the transport (`websocket`, `loopback`, ...), the codec on the wire, its sample rate, and what the endpoint measured (`in` from the caller); null where it cannot tell.',
    }),
    from_number: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'Phone calls only: the caller\'s number (E.164); null once removed by the storage policy when it is the far party\'s.' })),
    to_number: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'Phone calls only: the called number.' })),
    direction: Type.Optional(StringEnum(CALL_DIRECTIONS, { description: 'Phone calls only.' })),
    telephony_identifier: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'Phone calls only: the SIP Call-ID, or Twilio\'s CallSid.' })),
    transfer_destination: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'Phone calls only: where the call was transferred, when it was.' })),
    data_storage_setting: StringEnum(STORAGE_POLICIES),
    service_llm_dynamic_variables: AnyJson,
    override_dynamic_variables: AnyJson,
    custom_attributes: AnyJson,
    current_node_id: NullableText,
    current_state: NullableText,
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'Call' },
);
/** The fields the response schema leaves as free JSON; their TypeScript types are the decoded Call's. */
type JsonFields = 'transcript_object' | 'transcript_with_tool_calls' | 'call_analysis' | 'metadata' | 'latency' | 'service_llm_dynamic_variables' | 'override_dynamic_variables' | 'custom_attributes';
/** The API's call object (what get-call, list-calls, update-call and call.finished carry). */
export type CallView = Omit<Static<typeof CallResponse>, JsonFields> & Pick<Call, JsonFields>;

export interface CallViewOptions {
  /** Only the creation response carries the access token. */
  accessToken?: string;
  /** Base of absolute URLs (recording_url), e.g. http://127.0.0.1:8080. */
  publicBaseUrl?: string;
  /** The call's `recording_url` when it has a recording (a signed link); default: the API-key route. */
  recordingUrl?: (callId: string) => string;
}

export function recordingPathOf(callId: string): string {
  return `/v2/get-call-recording/${encodeURIComponent(callId)}`;
}

/** The API's call object for a call. */
export function toCallView(row: Call, options: CallViewOptions = {}): CallView {
  const view: CallView = {
    call_id: row.call_id,
    call_type: row.call_type,
    agent_id: row.agent_id,
    agent_version: row.agent_version,
    agent_name: row.agent_name,
    call_status: row.call_status,
    start_timestamp: row.start_timestamp,
    end_timestamp: row.end_timestamp,
    duration_ms: row.duration_ms,
    transcript: row.transcript,
    transcript_object: row.transcript_object,
    transcript_with_tool_calls: row.transcript_with_tool_calls,
    recording_url: row.recording_path
      ? (options.recordingUrl?.(row.call_id) ?? `${options.publicBaseUrl ?? ''}${recordingPathOf(row.call_id)}`)
      : null,
    disconnection_reason: row.disconnection_reason,
    call_analysis: row.call_analysis,
    metadata: row.metadata,
    latency: row.latency,
    media: row.media,
    data_storage_setting: row.data_storage_setting,
    service_llm_dynamic_variables: row.service_llm_dynamic_variables,
    override_dynamic_variables: row.override_dynamic_variables,
    custom_attributes: row.custom_attributes,
    current_node_id: row.current_node_id,
    current_state: row.current_state,
    created_at: row.created_at,
  };
  if (options.accessToken !== undefined) view.access_token = options.accessToken;
  if (row.call_type === 'phone_call') {
    view.from_number = row.from_number;
    view.to_number = row.to_number;
    if (row.direction !== null) view.direction = row.direction;
    view.telephony_identifier = row.telephony_identifier;
    view.transfer_destination = row.transfer_destination;
  }
  return view;
}
