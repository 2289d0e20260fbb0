/**
 * create-phone-call (Retell's `POST /v2/create-phone-call`): an outbound call from one of the
 * account's numbers, placed by the transport that reaches that number (a dialer: Twilio's REST
 * API for a Twilio number, the SIP endpoint's INVITE to the trunk's `termination_uri` for a SIP number). The call is `registered` while it rings, ongoing once answered (the
 * transport's `SessionRegistry.answer`), and ends `dial_busy`, `dial_no_answer` or `dial_failed`
 * when it is not (`endUnanswered`, from the carrier's status reports).
 */
import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, ResourceId, StringMap, Strict } from '../domain/schema-kit.ts';
import { errors } from '../domain/errors.ts';
import type { Call } from '../domain/call.ts';
import type { DisconnectionReason } from '../domain/call-status.ts';
import { normalizeE164, type PhoneNumber, type PhoneNumberReach } from '../domain/phone-number.ts';
import type { AccountService, Principal } from './account.service.ts';
import type { CallLifecycle } from './call-lifecycle.ts';
import { type CallView, toCallView } from './call.view.ts';
import type { PhoneNumberService } from './phone-number.service.ts';

export const CreatePhoneCallBody = Strict({
  from_number: Type.String({ minLength: 1, maxLength: 32, description: 'One of the account’s numbers (E.164).' }),
  to_number: Type.String({ minLength: 1, maxLength: 32, description: 'The number to call (E.164).' }),
  override_agent_id: Type.Optional(ResourceId),
  override_agent_version: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
  metadata: Type.Optional(FreeObject),
  retell_llm_dynamic_variables: Type.Optional(StringMap),
});
export type CreatePhoneCallBody = Static<typeof CreatePhoneCallBody>;

/** Retell's register-phone-call body: a call the account's own PBX or carrier dials in at `sip:{call_id}@SIP_PUBLIC_HOST`. */
export const RegisterPhoneCallBody = Strict({
  agent_id: ResourceId,
  agent_version: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
  from_number: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'The caller (E.164), as the PBX knows it.' })),
  to_number: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'The number called (E.164).' })),
  direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { description: 'Default inbound.' })),
  metadata: Type.Optional(FreeObject),
  retell_llm_dynamic_variables: Type.Optional(StringMap),
});
export type RegisterPhoneCallBody = Static<typeof RegisterPhoneCallBody>;

/** How long a registered call waits for its INVITE before it ends unjoined, ms (Retell's 5 minutes). */
export const REGISTERED_CALL_TTL_MS = 300_000;

/** A transport that places calls on the numbers it reaches. */
export interface PhoneDialer {
  /** Places `call` from `number` (reached as `reach`) to `to`; returns the carrier's id of the call. Throws when the carrier refuses. */
  dial(call: Call, number: PhoneNumber, reach: PhoneNumberReach, to: string): Promise<string>;
}

/** Why a carrier says a call was not answered. */
export type Unanswered = Extract<DisconnectionReason, 'dial_busy' | 'dial_no_answer' | 'dial_failed'>;

export interface PhoneCallServiceDeps {
  lifecycle: CallLifecycle;
  phoneNumbers: PhoneNumberService;
  /** The accounts' concurrency limits, which inbound calls count against like web calls. */
  accounts: Pick<AccountService, 'concurrencyLimitOf'>;
  /** How long a placed call may ring before it counts as unanswered, ms (default 60 000). */
  ringMs?: number;
}

export class PhoneCallService {
  readonly #d: PhoneCallServiceDeps;
  readonly #dialers = new Map<PhoneNumberReach['kind'], PhoneDialer>();

  constructor(deps: PhoneCallServiceDeps) {
    this.#d = deps;
  }

  /** A transport places the calls of numbers reached as `kind` (it calls this when it starts). */
  useDialer(kind: PhoneNumberReach['kind'], dialer: PhoneDialer): void {
    this.#dialers.set(kind, dialer);
  }

  /**
   * Places a call and returns it (registered, ringing). A carrier that refuses it at once ends it
   * `dial_failed` (returned so, with its `call.finished`). Bad input is a 400 naming the field.
   */
  async createPhoneCall(principal: Principal, input: CreatePhoneCallBody): Promise<CallView> {
    const number = await this.#d.phoneNumbers.findForOutbound(principal.accountId, input.from_number);
    const to = normalizeE164(input.to_number);
    if (to === null || !input.to_number.startsWith('+')) throw errors.invalidRequest('to_number must be an E.164 number (+ and 2 to 15 digits)', { field: 'to_number' });
    const agentId = input.override_agent_id ?? number.outbound_agent_id;
    if (!agentId) throw errors.invalidRequest('override_agent_id is required: from_number has no outbound agent', { field: 'override_agent_id' });
    const agentVersion = input.override_agent_id ? input.override_agent_version : (input.override_agent_version ?? number.outbound_agent_version ?? undefined);
    const reach = this.#d.phoneNumbers.reachOf(number);
    if (reach.kind === 'sip' && reach.target === null) throw errors.invalidRequest('from_number has no termination_uri: set one to place calls over its SIP trunk', { field: 'from_number' });
    const dialer = this.#dialers.get(reach.kind);
    if (!dialer) throw errors.invalidRequest(`from_number is reached ${reach.kind === 'twilio' ? 'through Twilio' : 'over a SIP trunk'}, and this server places no such calls`, { field: 'from_number' });
    const call = await this.#d.lifecycle.registerCall(
      {
        accountId: principal.accountId,
        agent_id: agentId,
        ...(agentVersion === undefined ? {} : { agent_version: agentVersion }),
        ...(input.metadata ? { metadata: input.metadata } : {}),
        ...(input.retell_llm_dynamic_variables ? { service_llm_dynamic_variables: input.retell_llm_dynamic_variables } : {}),
        callType: 'phone_call',
        concurrencyLimit: principal.concurrencyLimit,
        phone: { from_number: number.phone_number, to_number: to, direction: 'outbound', telephony_identifier: '' },
      },
      this.#d.ringMs ?? 60_000,
    );
    let telephonyIdentifier: string;
    try {
      telephonyIdentifier = await dialer.dial(call, number, reach, to);
    } catch {
      await this.#d.lifecycle.finishCall(call.call_id, { reason: 'dial_failed' });
      return this.#view(call.call_id);
    }
    await this.#d.lifecycle.setTelephonyIdentifier(call.call_id, telephonyIdentifier);
    return this.#view(call.call_id);
  }

  /**
   * Registers a call that the account's own PBX or carrier will dial in at
   * `sip:{call_id}@SIP_PUBLIC_HOST` (Retell's custom telephony): `registered` until that INVITE
   * comes (the SIP endpoint answers it on the call's agent), ended unjoined after
   * REGISTERED_CALL_TTL_MS. Counts against the account's concurrency limit like any call.
   */
  async registerPhoneCall(principal: Principal, input: RegisterPhoneCallBody): Promise<CallView> {
    const numbers: Record<'from_number' | 'to_number', string | null> = { from_number: null, to_number: null };
    for (const field of ['from_number', 'to_number'] as const) {
      const given = input[field];
      if (given === undefined) continue;
      const e164 = normalizeE164(given);
      if (e164 === null || !given.startsWith('+')) throw errors.invalidRequest(`${field} must be an E.164 number (+ and 2 to 15 digits)`, { field });
      numbers[field] = e164;
    }
    const call = await this.#d.lifecycle.registerCall(
      {
        accountId: principal.accountId,
        agent_id: input.agent_id,
        ...(input.agent_version === undefined ? {} : { agent_version: input.agent_version }),
        ...(input.metadata ? { metadata: input.metadata } : {}),
        ...(input.retell_llm_dynamic_variables ? { service_llm_dynamic_variables: input.retell_llm_dynamic_variables } : {}),
        callType: 'phone_call',
        concurrencyLimit: principal.concurrencyLimit,
        phone: { ...numbers, direction: input.direction ?? 'inbound', telephony_identifier: '' },
      },
      REGISTERED_CALL_TTL_MS,
    );
    return this.#view(call.call_id);
  }

  /**
   * The call registered by register-phone-call that an INVITE to `sip:{callId}@...` dials in,
   * while it waits for it; undefined otherwise (unknown, answered, ended, or a call this server
   * places itself, which has a carrier's id).
   */
  async findDialIn(callId: string): Promise<Call | undefined> {
    const call = await this.#d.lifecycle.readCall(callId);
    return call && call.call_type === 'phone_call' && call.call_status === 'registered' && call.telephony_identifier === '' ? call : undefined;
  }

  /** The carrier's id of a registered call that dialed in (the SIP Call-ID), before it is answered. */
  async noteTelephonyIdentifier(callId: string, telephonyIdentifier: string): Promise<void> {
    await this.#d.lifecycle.setTelephonyIdentifier(callId, telephonyIdentifier);
  }

  /** The concurrency limit an inbound call to one of the account's numbers is admitted under (null: none). */
  inboundLimit(accountId: string): Promise<number | null> {
    return this.#d.accounts.concurrencyLimitOf(accountId);
  }

  /** Whether the account is at its concurrency limit now (a carrier's webhook refuses the call before it rings through). */
  async atConcurrencyLimit(accountId: string): Promise<boolean> {
    const limit = await this.#d.accounts.concurrencyLimitOf(accountId);
    return limit !== null && (await this.#d.lifecycle.countLiveCalls(accountId)) >= limit;
  }

  /** The carrier says the placed call `callId` of `accountId` was not answered: it ends so, if still ringing. */
  async endUnanswered(accountId: string, callId: string, reason: Unanswered): Promise<void> {
    const call = await this.#d.lifecycle.readCall(callId);
    if (!call || call.account_id !== accountId || call.call_status !== 'registered') return;
    await this.#d.lifecycle.finishCall(callId, { reason });
  }

  async #view(callId: string): Promise<CallView> {
    const row = await this.#d.lifecycle.readCall(callId);
    if (!row) throw errors.callNotFound(callId);
    return toCallView(row);
  }
}
