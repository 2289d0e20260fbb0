import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { systemClock } from '../../src/lib/clock.ts';
import { AccountService } from '../../src/services/account.service.ts';
import { AccountRepository } from '../../src/storage/account.repository.ts';
import { type Store, openStore } from '../../src/storage/store.ts';
import { openPgliteStore } from './pglite.ts';

/** `pgvector`: PostgreSQL with pgvector, served by PGlite in the test's process (pglite.ts); not one of STORES. */
export type StoreName = 'sqlite' | 'postgres' | 'pgvector';

export interface StoreKind {
  name: StoreName;
  /** Why this store is skipped here, or false when it runs. */
  skip: string | false;
}

/**
 * The stores every storage and API test runs on. PostgreSQL runs when TEST_DATABASE_URL names a
 * server (scripts/test.ts starts a throwaway one when it can); otherwise it is skipped, with the
 * reason scripts/test.ts found.
 */
export const STORES: StoreKind[] = [
  { name: 'sqlite', skip: false },
  {
    name: 'postgres',
    skip: process.env.TEST_DATABASE_URL
      ? false
      : `no PostgreSQL: ${process.env.SWITCHBOARD_SKIP_POSTGRES ?? 'TEST_DATABASE_URL is not set'}`,
  },
];

/**
 * The WEBHOOK_SECRET_KEYS of every test server and runtime on PostgreSQL unless the test sets its
 * own: the servers of one database must share the key, and a PostgreSQL server refuses to start
 * without it.
 */
export const TEST_WEBHOOK_SECRET_KEYS = Buffer.alloc(32, 7).toString('base64');

export interface TestStore {
  store: Store;
  /** The store's location, for a second process (a child server, a second worker). */
  databaseUrl: string | null;
  dataDir: string;
  close(): Promise<void>;
}

/** A fresh, empty, migrated store: a new SQLite file, or a new PostgreSQL database. */
export async function openTestStore(name: StoreName): Promise<TestStore> {
  if (name === 'pgvector') return openPgliteStore();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-test-'));
  if (name === 'sqlite') {
    const store = await openStore({ databaseUrl: null, dataDir });
    return {
      store,
      databaseUrl: null,
      dataDir,
      async close() {
        await store.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('TEST_DATABASE_URL is not set');
  const database = `sbt_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${database}`);
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  const store = await openStore({ databaseUrl, dataDir, poolSize: 10 });
  return {
    store,
    databaseUrl,
    dataDir,
    async close() {
      await store.close();
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A new account's first API key, written into `store` by the same service as the CLI's `keys
 * create` (with the server's default rate limit), without starting a CLI process for it: about
 * two seconds of start-up CPU each. test/process/server.test.ts runs the CLI itself.
 */
export async function createApiKey(store: Store): Promise<string> {
  const accounts = new AccountService({ store, accounts: new AccountRepository(store.db), clock: systemClock, defaultRateLimitPerMinute: 600 });
  return (await accounts.createAccount({})).api_key;
}
