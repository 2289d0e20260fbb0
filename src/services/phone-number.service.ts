import type { Clock } from '../lib/clock.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { AppError, errors } from '../domain/errors.ts';
import {
  type PhoneNumber,
  type PhoneNumberReach,
  type PhoneNumberType,
  TWILIO_ACCOUNT_SID_PATTERN,
  TWILIO_AUTH_TOKEN_PATTERN,
  normalizeE164,
  parseTerminationUri,
  prettyPhoneNumber,
} from '../domain/phone-number.ts';
import type { PhoneNumberChanges, PhoneNumberRepository } from '../storage/phone-number.repository.ts';
import type { Store } from '../storage/store.ts';
import type { AgentService } from './agent.service.ts';
import { type DestinationCheck, checkWebhookUrl } from './webhook-url.ts';

/** Numbers one account may hold. */
export const MAX_PHONE_NUMBERS_PER_ACCOUNT = 1000;

/** The writable fields of a number, as import-phone-number and update-phone-number take them. */
export interface PhoneNumberFields {
  nickname?: string | null;
  inbound_agent_id?: string | null;
  inbound_agent_version?: number | null;
  outbound_agent_id?: string | null;
  outbound_agent_version?: number | null;
  inbound_webhook_url?: string | null;
  termination_uri?: string | null;
  sip_trunk_auth_username?: string | null;
  sip_trunk_auth_password?: string | null;
  twilio_account_sid?: string | null;
  twilio_auth_token?: string | null;
}

export interface ImportPhoneNumberInput extends PhoneNumberFields {
  phone_number: string;
}

/** A number as the API answers it: Retell's fields, and whether secrets are set, never the secrets. */
export interface PhoneNumberView {
  phone_number: string;
  phone_number_pretty: string;
  phone_number_type: PhoneNumberType;
  nickname: string | null;
  inbound_agent_id: string | null;
  inbound_agent_version: number | null;
  outbound_agent_id: string | null;
  outbound_agent_version: number | null;
  inbound_webhook_url: string | null;
  termination_uri: string | null;
  sip_trunk_auth_username: string | null;
  /** Whether a digest password is stored (it is never returned). */
  sip_trunk_auth_password_set: boolean;
  /** Whether Twilio credentials are stored (they are never returned). */
  twilio_credentials_set: boolean;
  created_at: number;
  last_modification_timestamp: number;
}

export interface PhoneNumberServiceDeps {
  store: Store;
  numbers: PhoneNumberRepository;
  agents: Pick<AgentService, 'resolveVersion'>;
  box: SecretBox;
  clock: Clock;
  /** The one URL policy: judges `inbound_webhook_url` and the host of `termination_uri`. */
  destinations: DestinationCheck;
}

/**
 * Phone numbers (issue 24): import, read, list, update and delete, scoped to the account; and,
 * for the phone transports, a number's account and agents by the number alone and how it is
 * reached, secrets decrypted.
 */
export class PhoneNumberService {
  readonly #d: PhoneNumberServiceDeps;

  constructor(deps: PhoneNumberServiceDeps) {
    this.#d = deps;
  }

  async importNumber(accountId: string, input: ImportPhoneNumberInput): Promise<PhoneNumberView> {
    const phoneNumber = normalizeE164(input.phone_number);
    if (phoneNumber === null || !input.phone_number.startsWith('+')) {
      throw errors.invalidRequest('phone_number must be an E.164 number: + and 2 to 15 digits, the first not 0 (e.g. +14155551234)', { field: 'phone_number' });
    }
    const now = this.#d.clock.now();
    const empty: PhoneNumber = {
      phone_number: phoneNumber,
      account_id: accountId,
      nickname: null,
      inbound_agent_id: null,
      inbound_agent_version: null,
      outbound_agent_id: null,
      outbound_agent_version: null,
      inbound_webhook_url: null,
      termination_uri: null,
      sip_trunk_auth_username: null,
      sip_trunk_auth_password_encrypted: null,
      twilio_account_sid_encrypted: null,
      twilio_auth_token_encrypted: null,
      created_at: now,
      updated_at: now,
    };
    const number: PhoneNumber = { ...empty, ...(await this.#changes(accountId, empty, input)), updated_at: now };
    try {
      await this.#d.store.transaction(async (tx) => {
        if (await this.#d.numbers.findAnyAccount(phoneNumber, tx)) throw errors.phoneNumberTaken(phoneNumber);
        if ((await this.#d.numbers.count(accountId, tx)) >= MAX_PHONE_NUMBERS_PER_ACCOUNT) throw errors.phoneNumberLimitReached(MAX_PHONE_NUMBERS_PER_ACCOUNT);
        await this.#d.numbers.insert(number, tx);
      });
    } catch (error) {
      // Two imports of one number at once: the second one's insert breaks the key.
      if (!(error instanceof AppError) && (await this.#d.numbers.findAnyAccount(phoneNumber))) throw errors.phoneNumberTaken(phoneNumber);
      throw error;
    }
    return toPhoneNumberView(number);
  }

  async getNumber(accountId: string, raw: string): Promise<PhoneNumberView> {
    return toPhoneNumberView(await this.#find(accountId, raw));
  }

  async listNumbers(accountId: string): Promise<PhoneNumberView[]> {
    return (await this.#d.numbers.list(accountId)).map(toPhoneNumberView);
  }

  /** Changes the given fields; null clears one. The result must still be reachable one way only. */
  async updateNumber(accountId: string, raw: string, input: PhoneNumberFields): Promise<PhoneNumberView> {
    const current = await this.#find(accountId, raw);
    const changes = { ...(await this.#changes(accountId, current, input)), updated_at: Math.max(this.#d.clock.now(), current.updated_at) };
    await this.#d.numbers.update(accountId, current.phone_number, changes);
    return toPhoneNumberView({ ...current, ...changes });
  }

  async deleteNumber(accountId: string, raw: string): Promise<void> {
    const number = await this.#find(accountId, raw);
    if (!(await this.#d.numbers.delete(accountId, number.phone_number))) throw errors.phoneNumberNotFound(raw);
  }

  /** The stored number `raw` names (with or without its `+`), whichever account holds it: inbound calls route by it. */
  async findForInbound(raw: string): Promise<PhoneNumber | undefined> {
    const phoneNumber = normalizeE164(raw);
    return phoneNumber === null ? undefined : this.#d.numbers.findAnyAccount(phoneNumber);
  }

  /** The account's number `raw`, for an outbound call from it; not found is a 400 naming `field`. */
  async findForOutbound(accountId: string, raw: string, field = 'from_number'): Promise<PhoneNumber> {
    const phoneNumber = normalizeE164(raw);
    const number = phoneNumber === null ? undefined : await this.#d.numbers.find(accountId, phoneNumber);
    if (!number) throw errors.invalidRequest(`${field} is not a phone number of this account (import it with import-phone-number)`, { field });
    return number;
  }

  /** How `number` is reached, secrets decrypted: for a transport placing or checking a call; never for a response. */
  reachOf(number: PhoneNumber): PhoneNumberReach {
    if (number.twilio_account_sid_encrypted !== null && number.twilio_auth_token_encrypted !== null) {
      return { kind: 'twilio', accountSid: this.#d.box.decrypt(number.twilio_account_sid_encrypted), authToken: this.#d.box.decrypt(number.twilio_auth_token_encrypted) };
    }
    const parsed = number.termination_uri === null ? null : parseTerminationUri(number.termination_uri);
    const target = parsed !== null && 'target' in parsed ? parsed.target : null;
    const auth =
      number.sip_trunk_auth_username !== null && number.sip_trunk_auth_password_encrypted !== null
        ? { username: number.sip_trunk_auth_username, password: this.#d.box.decrypt(number.sip_trunk_auth_password_encrypted) }
        : null;
    return { kind: 'sip', target, auth };
  }

  /**
   * Why a trunk's resolved `address` (an IP literal) may not be dialled, by the one URL policy;
   * null when it may. A `termination_uri` host name is judged on the address it resolves to at
   * each call (a name may resolve somewhere else than when it was set).
   */
  trunkAddressRefusal(address: string): string | null {
    return this.#d.destinations.hostRefusal(address);
  }

  /** Re-encrypts every stored secret not under the primary server key; returns how many. */
  async reencryptSecrets(): Promise<number> {
    let count = 0;
    const columns = ['sip_trunk_auth_password_encrypted', 'twilio_account_sid_encrypted', 'twilio_auth_token_encrypted'] as const;
    for (const row of await this.#d.numbers.allEncryptedSecrets()) {
      for (const column of columns) {
        const value = row[column];
        if (value === null || this.#d.box.isCurrent(value)) continue;
        await this.#d.numbers.rewriteSecret(row.phone_number, column, value, this.#d.box.encrypt(this.#d.box.decrypt(value)));
        count += 1;
      }
    }
    return count;
  }

  // --- internals ----------------------------------------------------------------------------

  async #find(accountId: string, raw: string): Promise<PhoneNumber> {
    const phoneNumber = normalizeE164(raw);
    const number = phoneNumber === null ? undefined : await this.#d.numbers.find(accountId, phoneNumber);
    if (!number) throw errors.phoneNumberNotFound(raw);
    return number;
  }

  /**
   * The stored columns `input` changes on `current`, every field checked: agents of this account
   * (and their versions), the URL policy on the webhook and the trunk's host, Twilio's formats, and
   * one way of reaching the number (a SIP trunk or Twilio, not both; Twilio's two fields together;
   * a password only with a user name).
   */
  async #changes(accountId: string, current: PhoneNumber, input: PhoneNumberFields): Promise<Omit<PhoneNumberChanges, 'updated_at'>> {
    const changes: Omit<PhoneNumberChanges, 'updated_at'> = {};
    if (input.nickname !== undefined) changes.nickname = input.nickname;
    for (const side of ['inbound', 'outbound'] as const) {
      const idField = `${side}_agent_id` as const;
      const versionField = `${side}_agent_version` as const;
      if (input[idField] === undefined && input[versionField] === undefined) continue;
      const agentId = input[idField] === undefined ? current[idField] : input[idField];
      const version = input[versionField] === undefined ? (input[idField] === undefined ? current[versionField] : null) : input[versionField];
      if (agentId === null && version !== null) throw errors.invalidRequest(`${versionField} needs ${idField}`, { field: versionField });
      if (agentId !== null) await this.#checkAgent(accountId, agentId, version, idField, versionField);
      changes[idField] = agentId;
      changes[versionField] = version;
    }
    if (input.inbound_webhook_url !== undefined) {
      changes.inbound_webhook_url = input.inbound_webhook_url === null ? null : checkWebhookUrl(input.inbound_webhook_url, this.#d.destinations, 'inbound_webhook_url');
    }
    if (input.termination_uri !== undefined && input.termination_uri !== null) {
      const parsed = parseTerminationUri(input.termination_uri);
      if ('refusal' in parsed) throw errors.invalidRequest(`termination_uri ${parsed.refusal}`, { field: 'termination_uri' });
      const refused = this.#d.destinations.hostRefusal(parsed.target.host);
      if (refused) throw errors.invalidRequest(`termination_uri is not an allowed destination: ${refused}`, { field: 'termination_uri' });
    }
    if (input.termination_uri !== undefined) changes.termination_uri = input.termination_uri;
    if (input.sip_trunk_auth_username !== undefined) changes.sip_trunk_auth_username = input.sip_trunk_auth_username;
    if (input.sip_trunk_auth_password !== undefined) {
      changes.sip_trunk_auth_password_encrypted = input.sip_trunk_auth_password === null ? null : this.#d.box.encrypt(input.sip_trunk_auth_password);
    }
    if (input.twilio_account_sid !== undefined && input.twilio_account_sid !== null && !TWILIO_ACCOUNT_SID_PATTERN.test(input.twilio_account_sid)) {
      throw errors.invalidRequest('twilio_account_sid must be AC followed by 32 hexadecimal digits', { field: 'twilio_account_sid' });
    }
    if (input.twilio_auth_token !== undefined && input.twilio_auth_token !== null && !TWILIO_AUTH_TOKEN_PATTERN.test(input.twilio_auth_token)) {
      throw errors.invalidRequest('twilio_auth_token must be 32 hexadecimal digits', { field: 'twilio_auth_token' });
    }
    if (input.twilio_account_sid !== undefined) {
      changes.twilio_account_sid_encrypted = input.twilio_account_sid === null ? null : this.#d.box.encrypt(input.twilio_account_sid);
    }
    if (input.twilio_auth_token !== undefined) {
      changes.twilio_auth_token_encrypted = input.twilio_auth_token === null ? null : this.#d.box.encrypt(input.twilio_auth_token);
    }
    const after = { ...current, ...changes };
    const twilio = [after.twilio_account_sid_encrypted, after.twilio_auth_token_encrypted].filter((v) => v !== null).length;
    if (twilio === 1) {
      const missing = after.twilio_account_sid_encrypted === null ? 'twilio_account_sid' : 'twilio_auth_token';
      throw errors.invalidRequest(`${missing} is needed with ${missing === 'twilio_account_sid' ? 'twilio_auth_token' : 'twilio_account_sid'}: a Twilio number needs both`, { field: missing });
    }
    const sip = after.termination_uri !== null || after.sip_trunk_auth_username !== null || after.sip_trunk_auth_password_encrypted !== null;
    if (twilio === 2 && sip) {
      const field = input.twilio_account_sid !== undefined || input.twilio_auth_token !== undefined ? 'twilio_account_sid' : 'termination_uri';
      throw errors.invalidRequest(
        'a number is reached either over a SIP trunk (termination_uri, sip_trunk_auth_*) or through Twilio (twilio_account_sid, twilio_auth_token), not both; set the other side to null',
        { field },
      );
    }
    if (after.sip_trunk_auth_password_encrypted !== null && after.sip_trunk_auth_username === null) {
      throw errors.invalidRequest('sip_trunk_auth_password needs sip_trunk_auth_username', { field: 'sip_trunk_auth_username' });
    }
    if (after.sip_trunk_auth_username !== null && after.sip_trunk_auth_password_encrypted === null) {
      throw errors.invalidRequest('sip_trunk_auth_username needs sip_trunk_auth_password', { field: 'sip_trunk_auth_password' });
    }
    return changes;
  }

  async #checkAgent(accountId: string, agentId: string, version: number | null, idField: string, versionField: string): Promise<void> {
    try {
      await this.#d.agents.resolveVersion(accountId, agentId, version ?? undefined);
    } catch (error) {
      if (error instanceof AppError && error.code === 'agent_not_found') {
        throw errors.invalidRequest(`${idField}: no agent ${agentId} under this API key`, { field: idField });
      }
      if (error instanceof AppError && error.code === 'agent_version_not_found') {
        throw errors.invalidRequest(`${versionField}: agent ${agentId} has no version ${String(version)}`, { field: versionField });
      }
      throw error;
    }
  }
}

/** A number as the API answers it. */
export function toPhoneNumberView(number: PhoneNumber): PhoneNumberView {
  const twilio = number.twilio_account_sid_encrypted !== null && number.twilio_auth_token_encrypted !== null;
  return {
    phone_number: number.phone_number,
    phone_number_pretty: prettyPhoneNumber(number.phone_number),
    phone_number_type: twilio ? 'twilio' : 'custom',
    nickname: number.nickname,
    inbound_agent_id: number.inbound_agent_id,
    inbound_agent_version: number.inbound_agent_version,
    outbound_agent_id: number.outbound_agent_id,
    outbound_agent_version: number.outbound_agent_version,
    inbound_webhook_url: number.inbound_webhook_url,
    termination_uri: number.termination_uri,
    sip_trunk_auth_username: number.sip_trunk_auth_username,
    sip_trunk_auth_password_set: number.sip_trunk_auth_password_encrypted !== null,
    twilio_credentials_set: twilio,
    created_at: number.created_at,
    last_modification_timestamp: number.updated_at,
  };
}
