import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { AccountTable, ApiKeyTable } from './tables/foundation.tables.ts';

export type AccountRow = AccountTable;
export type ApiKeyRow = ApiKeyTable;

/** Accounts, their API keys and server-wide secrets. */
export class AccountRepository {
  readonly #db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insertAccount(account: AccountRow, db: Kysely<Database> = this.#db): Promise<void> {
    await db.insertInto('accounts').values(account).execute();
  }

  async findAccount(id: string): Promise<AccountRow | undefined> {
    return this.#db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insertKey(key: ApiKeyRow, db: Kysely<Database> = this.#db): Promise<void> {
    await db.insertInto('api_keys').values(key).execute();
  }

  /** The key with this hash and its account, if the key exists and is not revoked. */
  async findActiveKeyByHash(keyHash: string): Promise<{ key: ApiKeyRow; account: AccountRow } | undefined> {
    const row = await this.#db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id as key_id',
        'api_keys.name as key_name',
        'api_keys.key_hash',
        'api_keys.key_prefix',
        'api_keys.created_at as key_created_at',
        'api_keys.revoked_at',
        'accounts.id as account_id',
        'accounts.name as account_name',
        'accounts.trial_ends_at',
        'accounts.rate_limit_per_minute',
        'accounts.concurrency_limit',
        'accounts.created_at as account_created_at',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      key: {
        id: row.key_id,
        account_id: row.account_id,
        name: row.key_name,
        key_hash: row.key_hash,
        key_prefix: row.key_prefix,
        created_at: row.key_created_at,
        revoked_at: row.revoked_at,
      },
      account: {
        id: row.account_id,
        name: row.account_name,
        trial_ends_at: row.trial_ends_at,
        rate_limit_per_minute: row.rate_limit_per_minute,
        concurrency_limit: row.concurrency_limit,
        created_at: row.account_created_at,
      },
    };
  }

  async listKeys(accountId: string): Promise<ApiKeyRow[]> {
    return this.#db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** Marks a key revoked; returns false when no such key exists. */
  async revokeKey(id: string, atMs: number): Promise<boolean> {
    const key = await this.#db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst();
    if (!key) return false;
    if (key.revoked_at === null) {
      await this.#db.updateTable('api_keys').set({ revoked_at: atMs }).where('id', '=', id).execute();
    }
    return true;
  }

  /** Returns the named secret, creating it with `generate()` if it does not exist yet (race-safe). */
  async getOrCreateSecret(name: string, generate: () => string, nowMs: number): Promise<string> {
    await this.#db
      .insertInto('server_secrets')
      .values({ name, value: generate(), created_at: nowMs })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.#db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
    return row.value;
  }
}
