import { hash, randomBytes } from 'node:crypto';
import type { Clock } from '../lib/clock.ts';
import { CappedMap } from '../lib/capped-map.ts';
import { newId } from '../lib/ids.ts';
import { errors } from '../domain/errors.ts';
import type { AccountRepository, AccountRow, ApiKeyRow } from '../storage/account.repository.ts';
import type { Store } from '../storage/store.ts';
import type { Notifications } from '../storage/pg-notifications.ts';

/** What a request is allowed to act as, once its API key checks out. */
export interface Principal {
  accountId: string;
  keyId: string;
  trialEndsAt: number | null;
  rateLimitPerMinute: number;
  /** Calls registered or ongoing at once the account may have; null for no limit. */
  concurrencyLimit: number | null;
}

export interface ApiKeyView {
  id: string;
  account_id: string;
  name: string | null;
  key_prefix: string;
  created_at: string;
  revoked_at: string | null;
}

const KEY_PREFIX = 'sb_';
const KEY_CACHE_MAX = 10_000;
/** `sb_` + 43 base64url characters (32 random bytes). */
const KEY_PATTERN = /^sb_[A-Za-z0-9_-]{43}$/;
/** `Authorization` credentials: the scheme, one or more spaces, the key. */
const BEARER = /^bearer +(\S+)$/i;

/**
 * The API key of an `Authorization` value `Bearer <key>`, or undefined. The scheme is
 * case-insensitive and may be followed by several spaces (RFC 9110 11.1 and 11.4).
 */
function bearerKey(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const key = BEARER.exec(authorization)?.[1];
  return key !== undefined && KEY_PATTERN.test(key) ? key : undefined;
}

export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Accounts and API keys: creation, listing, revocation and authentication. */
export class AccountService {
  readonly #store: Store;
  readonly #accounts: AccountRepository;
  readonly #clock: Clock;
  readonly #defaultRateLimit: number;
  readonly #cacheTtlMs: number;
  readonly #notifications: Notifications | undefined;
  /** Recently authenticated keys by hash; bounded, short-lived, cleared on any revocation here. */
  readonly #cache = new CappedMap<string, { principal: Principal; expiresAt: number }>(KEY_CACHE_MAX);

  constructor(deps: {
    store: Store;
    accounts: AccountRepository;
    clock: Clock;
    defaultRateLimitPerMinute: number;
    /** How long a checked key is trusted without asking the store again (0 disables). */
    keyCacheTtlMs?: number;
    /** Tells every server of the store about revocations ('api_key_revocations'); see `forgetCachedKeys`. */
    notifications?: Notifications;
  }) {
    this.#store = deps.store;
    this.#accounts = deps.accounts;
    this.#clock = deps.clock;
    this.#defaultRateLimit = deps.defaultRateLimitPerMinute;
    this.#cacheTtlMs = deps.keyCacheTtlMs ?? 0;
    this.#notifications = deps.notifications;
  }

  /** Creates an account with its first key. The key is returned here and never again. */
  async createAccount(options: { name?: string | null; trialEndsAt?: number | null; rateLimitPerMinute?: number; concurrencyLimit?: number | null }) {
    const now = this.#clock.now();
    const account: AccountRow = {
      id: newId('account'),
      name: options.name ?? null,
      trial_ends_at: options.trialEndsAt ?? null,
      rate_limit_per_minute: options.rateLimitPerMinute ?? this.#defaultRateLimit,
      concurrency_limit: options.concurrencyLimit ?? null,
      created_at: now,
    };
    const { key, row } = this.#makeKey(account.id, options.name ?? null, now);
    await this.#store.transaction(async (trx) => {
      await this.#accounts.insertAccount(account, trx);
      await this.#accounts.insertKey(row, trx);
    });
    return { account_id: account.id, key_id: row.id, api_key: key };
  }

  /** Adds a key to an existing account. */
  async createKey(accountId: string, name: string | null = null) {
    const account = await this.#accounts.findAccount(accountId);
    if (!account) throw errors.accountNotFound(accountId);
    const { key, row } = this.#makeKey(accountId, name, this.#clock.now());
    await this.#accounts.insertKey(row);
    return { account_id: accountId, key_id: row.id, api_key: key };
  }

  async listKeys(accountId: string): Promise<ApiKeyView[]> {
    const account = await this.#accounts.findAccount(accountId);
    if (!account) throw errors.accountNotFound(accountId);
    const keys = await this.#accounts.listKeys(accountId);
    return keys.map(toKeyView);
  }

  async revokeKey(keyId: string): Promise<void> {
    if (!(await this.#accounts.revokeKey(keyId, this.#clock.now()))) throw errors.apiKeyNotFound(keyId);
    this.#cache.clear();
    // Every server forgets the keys it trusted (forgetCachedKeys), so the key is refused everywhere at once.
    await this.#notifications?.notify('api_key_revocations', keyId);
  }

  /**
   * Forgets every checked key, so the next request of each asks the store again: on a revocation
   * by any server, and when revocations may have been missed (the notification connection was lost).
   */
  forgetCachedKeys(): void {
    this.#cache.clear();
  }

  /**
   * The principal of a recently checked key, without touching the store (undefined when the key is
   * not in the cache: call `authenticate`). Lets the HTTP edge answer the common case synchronously.
   */
  cachedPrincipal(authorization: string | undefined): Principal | undefined {
    if (this.#cacheTtlMs === 0 || this.#cache.size === 0) return undefined;
    const key = bearerKey(authorization);
    if (!key) return undefined;
    const cached = this.#cache.get(hashApiKey(key));
    return cached && cached.expiresAt > this.#clock.now() ? cached.principal : undefined;
  }

  /** Calls the account may have registered or ongoing at once (null: no limit; an unknown account: none). */
  async concurrencyLimitOf(accountId: string): Promise<number | null> {
    const account = await this.#accounts.findAccount(accountId);
    return account ? account.concurrency_limit : 0;
  }

  /** The principal behind an `Authorization` header value; throws `unauthenticated` otherwise. */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    const key = bearerKey(authorization);
    if (!key) throw errors.unauthenticated();
    const keyHash = hashApiKey(key);
    const now = this.#clock.now();
    const cached = this.#cache.get(keyHash);
    if (cached && cached.expiresAt > now) return cached.principal;
    const found = await this.#accounts.findActiveKeyByHash(keyHash);
    if (!found) throw errors.unauthenticated();
    const principal: Principal = {
      accountId: found.account.id,
      keyId: found.key.id,
      trialEndsAt: found.account.trial_ends_at,
      rateLimitPerMinute: found.account.rate_limit_per_minute,
      concurrencyLimit: found.account.concurrency_limit,
    };
    if (this.#cacheTtlMs > 0) this.#cache.set(keyHash, { principal, expiresAt: now + this.#cacheTtlMs });
    return principal;
  }

  #makeKey(accountId: string, name: string | null, now: number): { key: string; row: ApiKeyRow } {
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    return {
      key,
      row: {
        id: newId('apiKey'),
        account_id: accountId,
        name,
        key_hash: hashApiKey(key),
        key_prefix: key.slice(0, 7),
        created_at: now,
        revoked_at: null,
      },
    };
  }
}

function toKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    key_prefix: row.key_prefix,
    created_at: new Date(row.created_at).toISOString(),
    revoked_at: row.revoked_at === null ? null : new Date(row.revoked_at).toISOString(),
  };
}
