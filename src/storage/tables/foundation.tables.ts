export interface AccountTable {
  id: string;
  name: string | null;
  /** Epoch ms after which create-web-call answers 402; null for no trial. */
  trial_ends_at: number | null;
  /** Allowed create-web-call requests per minute. */
  rate_limit_per_minute: number;
  created_at: number;
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
}
