import type { PhoneNumber } from '../domain/phone-number.ts';
import type { Executor } from './store.ts';

/** The columns a number's update may change. */
export type PhoneNumberChanges = Partial<Omit<PhoneNumber, 'phone_number' | 'account_id' | 'created_at'>> & { updated_at: number };

/** Phone numbers. Reads by account are the API's; `findAnyAccount` routes an inbound call. */
export class PhoneNumberRepository {
  readonly #db: Executor;

  constructor(db: Executor) {
    this.#db = db;
  }

  async insert(number: PhoneNumber, db: Executor = this.#db): Promise<void> {
    await db.insertInto('phone_numbers').values(number).execute();
  }

  async find(accountId: string, phoneNumber: string, db: Executor = this.#db): Promise<PhoneNumber | undefined> {
    return db.selectFrom('phone_numbers').selectAll().where('phone_number', '=', phoneNumber).where('account_id', '=', accountId).executeTakeFirst();
  }

  /** The number whichever account holds it: an inbound call names only the number. */
  async findAnyAccount(phoneNumber: string, db: Executor = this.#db): Promise<PhoneNumber | undefined> {
    return db.selectFrom('phone_numbers').selectAll().where('phone_number', '=', phoneNumber).executeTakeFirst();
  }

  async list(accountId: string, db: Executor = this.#db): Promise<PhoneNumber[]> {
    return db.selectFrom('phone_numbers').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'asc').orderBy('phone_number', 'asc').execute();
  }

  async count(accountId: string, db: Executor = this.#db): Promise<number> {
    const row = await db.selectFrom('phone_numbers').select((eb) => eb.fn.countAll<number | string>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async update(accountId: string, phoneNumber: string, changes: PhoneNumberChanges, db: Executor = this.#db): Promise<void> {
    await db.updateTable('phone_numbers').set(changes).where('phone_number', '=', phoneNumber).where('account_id', '=', accountId).execute();
  }

  /** Whether a number was deleted. */
  async delete(accountId: string, phoneNumber: string, db: Executor = this.#db): Promise<boolean> {
    const result = await db.deleteFrom('phone_numbers').where('phone_number', '=', phoneNumber).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Numbers of the account that name `agentId` as their inbound or outbound agent. */
  async usingAgent(accountId: string, agentId: string, db: Executor = this.#db): Promise<string[]> {
    const rows = await db
      .selectFrom('phone_numbers')
      .select('phone_number')
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('inbound_agent_id', '=', agentId), eb('outbound_agent_id', '=', agentId)]))
      .execute();
    return rows.map((row) => row.phone_number);
  }

  /** Every stored secret, for re-encryption under a new server key. */
  async allEncryptedSecrets(): Promise<Array<Pick<PhoneNumber, 'phone_number' | 'sip_trunk_auth_password_encrypted' | 'twilio_account_sid_encrypted' | 'twilio_auth_token_encrypted'>>> {
    return this.#db
      .selectFrom('phone_numbers')
      .select(['phone_number', 'sip_trunk_auth_password_encrypted', 'twilio_account_sid_encrypted', 'twilio_auth_token_encrypted'])
      .execute();
  }

  /** Rewrites one secret column if it still holds `from`. */
  async rewriteSecret(
    phoneNumber: string,
    column: 'sip_trunk_auth_password_encrypted' | 'twilio_account_sid_encrypted' | 'twilio_auth_token_encrypted',
    from: string,
    to: string,
  ): Promise<void> {
    await this.#db.updateTable('phone_numbers').set({ [column]: to }).where('phone_number', '=', phoneNumber).where(column, '=', from).execute();
  }
}
