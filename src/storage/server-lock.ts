import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const SERVER_LOCK_FILE = 'server.lock';

/**
 * The embedded store belongs to one server process: its in-memory agent heads and its webhook worker
 * (which voids every delivery lease at start) assume no other server writes the same file. This lock
 * makes that a rule: an exclusive SQLite lock on `DATA_DIR/server.lock`, held by a transaction that
 * stays open for the life of the process. The kernel drops the lock when the process exits, however
 * it exits, so a crashed server never blocks the next one. The CLI does not take it: it may run
 * beside the server. Several server processes share a PostgreSQL store instead.
 */
export class ServerLock {
  readonly #db: DatabaseSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Takes the lock, or throws ServerLockedError at once if another process holds it. */
  static acquire(dataDir: string): ServerLock {
    fs.mkdirSync(dataDir, { recursive: true });
    const db = new DatabaseSync(path.join(dataDir, SERVER_LOCK_FILE), { timeout: 0 });
    try {
      db.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      db.close();
      if (error instanceof Error && /locked|busy/i.test(error.message)) throw new ServerLockedError(dataDir);
      throw error;
    }
    return new ServerLock(db);
  }

  /** Idempotent. */
  release(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

export class ServerLockedError extends Error {
  constructor(dataDir: string) {
    super(
      `another Switchboard server is using the embedded store in ${dataDir}; it serves one server process ` +
        '(stop the other one, give this one its own DATA_DIR, or share a PostgreSQL store with DATABASE_URL)',
    );
    this.name = 'ServerLockedError';
  }
}
