import fs from 'node:fs';
import path from 'node:path';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely';
import pg from 'pg';
import { NodeSqliteDatabase } from './node-sqlite-driver.ts';
import { SqliteCheckpointer } from './sqlite-checkpointer.ts';
import type { Database } from './schema.ts';
import { migrateToLatest } from './migrations/index.ts';

import type { Dialect } from './dialect.ts';

export type { Dialect };

/**
 * A query handle: the store's own, or an open transaction's. Repositories take one as their last
 * argument so that a service can put several of their writes in one transaction.
 */
export type Executor = Kysely<Database>;

/** The open database: one Kysely instance over SQLite or PostgreSQL. */
export interface Store {
  readonly db: Executor;
  readonly dialect: Dialect;
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T>;
  /** SQLite only: runs an autocommit statement without the driver when no transaction is open. */
  readonly direct?: (sql: string, parameters: readonly unknown[]) => unknown[] | undefined;
  /**
   * PostgreSQL only: runs a statement outside any transaction as a named prepared statement (parsed
   * and planned once per pooled connection, then only bound and executed). `name` must identify `sql`.
   */
  readonly prepared?: (name: string, sql: string, parameters: readonly unknown[]) => Promise<unknown[]>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}

export interface StoreOptions {
  /** A postgres:// URL, or null for the embedded SQLite file under `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
  /** SQLite file name inside dataDir (default switchboard.sqlite); ':memory:' for a throwaway store. */
  sqliteFile?: string;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** Opens the store and applies every pending migration. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openSqlite(options);
  try {
    await migrateToLatest(store.db, store.dialect);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

function openSqlite(options: StoreOptions): Store {
  const file = options.sqliteFile ?? 'switchboard.sqlite';
  let filename = file;
  if (file !== ':memory:') {
    fs.mkdirSync(options.dataDir, { recursive: true });
    filename = path.join(options.dataDir, file);
  }
  const database = new NodeSqliteDatabase(filename);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }) });
  const checkpointer = file === ':memory:' ? null : new SqliteCheckpointer(filename);
  const store = makeStore(db, 'sqlite', () => checkpointer?.close());
  return { ...store, direct: (text, parameters) => database.runDirect(text, parameters) };
}

/**
 * SQLite transactions begin IMMEDIATE, taking the write lock at once. A deferred transaction that
 * reads and then writes fails at once with "database is locked" when another process (the CLI, a
 * second tool on the same file) committed in between, whatever the busy timeout; an immediate one
 * waits for the lock with the busy timeout instead. Within this process there is one connection,
 * so nothing changes for the server's own transactions.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

function openPostgres(url: string, poolSize: number): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // Timestamps are epoch milliseconds in BIGINT columns: read them back as numbers, not strings.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID || oid === NUMERIC_OID
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    ...makeStore(db, 'postgres'),
    prepared: async (name, text, parameters) => (await pool.query({ name, text, values: [...parameters] })).rows as unknown[],
  };
}

function makeStore(db: Kysely<Database>, dialect: Dialect, beforeClose?: () => Promise<void> | undefined): Store {
  let closing: Promise<void> | null = null;
  return {
    db,
    dialect,
    transaction: (work) => db.transaction().execute(work),
    async ping() {
      await sql`select 1`.execute(db);
    },
    close() {
      closing ??= (async () => {
        await beforeClose?.();
        await db.destroy();
      })();
      return closing;
    },
  };
}
