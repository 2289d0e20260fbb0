export interface AccountTable {
  id: string;
  name: string | null;
  /** Epoch ms after which create-web-call answers 402; null for no trial. */
  trial_ends_at: number | null;
  /** Allowed create-web-call requests per minute. */
  rate_limit_per_minute: number;
  /** Calls registered or ongoing at once that create-web-call allows (429 beyond); null for no limit. */
  concurrency_limit: number | null;
  created_at: number;
}

/** The shared create-web-call token bucket of one account (PostgreSQL servers; migration 0007). */
export interface RateBucketTable {
  account_id: string;
  /** Tokens left at `updated_at`; refilled continuously at the account's rate per minute. */
  tokens: number;
  updated_at: number;
}

export interface ApiKeyTable {
  id: string;
  account_id: string;
  name: string | null;
  /** SHA-256 of the whole key, hex; the key itself is never stored. */
  key_hash: string;
  /** The first characters of the key, to recognise it in listings. */
  key_prefix: string;
  created_at: number;
  revoked_at: number | null;
}

/** Server-wide secrets generated at first start (e.g. the access-token signing key). */
export interface ServerSecretTable {
  name: string;
  value: string;
  created_at: number;
}

export interface FoundationTables {
  accounts: AccountTable;
  api_keys: ApiKeyTable;
  server_secrets: ServerSecretTable;
  rate_buckets: RateBucketTable;
}
