/**
 * What an inbound phone call to one of an account's numbers is admitted with, on any phone
 * transport (SIP, Twilio): the number's inbound agent, or what its `inbound_webhook_url` answered
 * (Retell's `call_inbound`: another agent, dynamic variables, metadata), under the account's
 * concurrency limit. Null when there is no agent to answer it.
 */
import type { PhoneNumber } from '../domain/phone-number.ts';
import type { AdmitCallInput } from '../services/call-lifecycle.ts';
import type { TransportContext } from './transport.ts';

export async function inboundAdmission(
  phone: TransportContext['phone'],
  number: PhoneNumber,
  call: { fromNumber: string; telephonyIdentifier: string },
): Promise<AdmitCallInput | null> {
  const override = number.inbound_webhook_url
    ? await phone.askInbound({
        accountId: number.account_id,
        url: number.inbound_webhook_url,
        agentId: number.inbound_agent_id,
        agentVersion: number.inbound_agent_version,
        fromNumber: call.fromNumber,
        toNumber: number.phone_number,
      })
    : {};
  const agentId = override.agentId ?? number.inbound_agent_id;
  if (agentId === null) return null;
  // The number's pinned version goes with the number's agent only.
  const agentVersion = override.agentVersion ?? (override.agentId === undefined ? number.inbound_agent_version : null);
  return {
    accountId: number.account_id,
    agent_id: agentId,
    ...(agentVersion === null ? {} : { agent_version: agentVersion }),
    ...(override.dynamicVariables ? { service_llm_dynamic_variables: override.dynamicVariables } : {}),
    ...(override.metadata ? { metadata: override.metadata } : {}),
    callType: 'phone_call',
    // The account's limit, as for web calls.
    concurrencyLimit: await phone.calls.inboundLimit(number.account_id),
    phone: { from_number: call.fromNumber, to_number: number.phone_number, direction: 'inbound', telephony_identifier: call.telephonyIdentifier },
  };
}
