import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';
import { CappedMap } from '../lib/capped-map.ts';

const STATEMENT_CACHE_SIZE = 256;

type Bindable = null | number | bigint | string | Uint8Array;

/**
 * Adapts `node:sqlite` to the synchronous database interface Kysely's SqliteDialect drives
 * (the better-sqlite3 shape), with a small cache of prepared statements.
 */
export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #statements = new CappedMap<string, SqliteStatement>(STATEMENT_CACHE_SIZE);

  constructor(filename: string) {
    this.#db = new DatabaseSync(filename);
    this.#db.exec('PRAGMA journal_mode = WAL');
    this.#db.exec('PRAGMA synchronous = NORMAL');
    this.#db.exec('PRAGMA foreign_keys = ON');
    this.#db.exec('PRAGMA busy_timeout = 5000');
    // Checkpoints run on a worker thread (see SqliteCheckpointer); this is only a safety net.
    this.#db.exec('PRAGMA wal_autocheckpoint = 20000');
  }

  prepare(sql: string): SqliteStatement {
    const cached = this.#statements.get(sql);
    if (cached) return cached;
    const statement = wrap(this.#db.prepare(sql));
    this.#statements.set(sql, statement);
    return statement;
  }

  /**
   * Runs a statement at once, outside Kysely's driver, when no transaction is open on the
   * connection; returns undefined when one is (the caller then goes through the driver, which
   * waits for it). node:sqlite is synchronous, so nothing can interleave with the statement: it is
   * exactly the autocommit statement the driver would have run, minus the promise hops.
   */
  runDirect(sql: string, parameters: readonly unknown[]): unknown[] | undefined {
    if (this.#db.isTransaction) return undefined;
    const statement = this.prepare(sql);
    if (statement.reader) return statement.all(parameters);
    statement.run(parameters);
    return [];
  }

  close(): void {
    this.#statements.clear();
    if (this.#db.isOpen) this.#db.close();
  }
}

function wrap(statement: StatementSync): SqliteStatement {
  const reader = statement.columns().length > 0;
  return {
    reader,
    all: (parameters) => statement.all(...bind(parameters)),
    run: (parameters) => {
      const result = statement.run(...bind(parameters));
      return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
    },
    iterate: (parameters) => statement.iterate(...bind(parameters)),
  };
}

function bind(parameters: ReadonlyArray<unknown>): Bindable[] {
  return parameters.map((value) => {
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (value === undefined) return null;
    return value as Bindable;
  });
}
