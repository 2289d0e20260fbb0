import { Type } from '@sinclair/typebox';
import { Name, Nullable, ResourceId, Strict } from '../../domain/schema-kit.ts';
import { WebhookUrl } from '../../domain/agent.ts';
import { MAX_TERMINATION_URI_LENGTH, PHONE_NUMBER_TYPES } from '../../domain/phone-number.ts';

/** A number in a body or path: bounded here, checked as E.164 by the service (which names the field). */
const PhoneNumberText = Type.String({ minLength: 1, maxLength: 32, description: 'E.164, e.g. +14155551234.' });
const AgentVersion = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Secret = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f]+$' });

/** The writable fields, as import-phone-number and update-phone-number take them. */
const fields = {
  nickname: Type.Optional(Nullable(Name(256))),
  inbound_agent_id: Type.Optional(Nullable(ResourceId)),
  inbound_agent_version: Type.Optional(Nullable(AgentVersion)),
  outbound_agent_id: Type.Optional(Nullable(ResourceId)),
  outbound_agent_version: Type.Optional(Nullable(AgentVersion)),
  inbound_webhook_url: Type.Optional(Nullable(WebhookUrl)),
  termination_uri: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: MAX_TERMINATION_URI_LENGTH, description: 'The SIP trunk outbound calls go to: host[:port][;transport=udp|tcp], optionally as a sip: URI.' })),
  ),
  sip_trunk_auth_username: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\s:@]+$' }))),
  sip_trunk_auth_password: Type.Optional(Nullable({ ...Secret, description: 'Digest password for the trunk; encrypted at rest, never returned.' })),
  twilio_account_sid: Type.Optional(Nullable({ ...Secret, description: "A Twilio number's account SID (AC...); encrypted at rest, never returned." })),
  twilio_auth_token: Type.Optional(Nullable({ ...Secret, description: "A Twilio number's auth token; encrypted at rest, never returned." })),
};

export const ImportPhoneNumberBody = Strict({ phone_number: PhoneNumberText, ...fields }, { title: 'ImportPhoneNumberRequest' });
export const UpdatePhoneNumberBody = Strict(fields, { title: 'UpdatePhoneNumberRequest' });
export const PhoneNumberParam = Type.Object({ phone_number: PhoneNumberText });

const NullableText = Nullable(Type.String());
const NullableInt = Nullable(Type.Integer());
export const PhoneNumberResponse = Type.Object(
  {
    phone_number: Type.String(),
    phone_number_pretty: Type.String(),
    phone_number_type: Type.Union(PHONE_NUMBER_TYPES.map((t) => Type.Literal(t)), { description: 'custom: a SIP trunk; twilio: a Twilio number.' }),
    nickname: NullableText,
    inbound_agent_id: NullableText,
    inbound_agent_version: NullableInt,
    outbound_agent_id: NullableText,
    outbound_agent_version: NullableInt,
    inbound_webhook_url: NullableText,
    termination_uri: NullableText,
    sip_trunk_auth_username: NullableText,
    sip_trunk_auth_password_set: Type.Boolean(),
    twilio_credentials_set: Type.Boolean(),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    last_modification_timestamp: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'PhoneNumber' },
);
