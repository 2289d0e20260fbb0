import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Store, openStore } from '../../src/storage/store.ts';

// Two processes on one SQLite file (the server and the CLI, or a test seeding rows beside a server
// child) must wait for each other's write lock instead of failing with "database is locked". A
// deferred transaction that reads first and writes later cannot wait; an immediate one holds the
// write lock from its first statement, so another writer sees the lock as soon as it begins.
describe('SQLite transactions begin immediate', () => {
  let dir: string;
  let store: Store;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-immediate-'));
    store = await openStore({ databaseUrl: null, dataDir: dir });
  });
  after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds the write lock from the first statement of a transaction', async () => {
    const other = new DatabaseSync(path.join(dir, 'switchboard.sqlite'));
    other.exec('PRAGMA busy_timeout = 0');
    try {
      await store.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx); // only a read so far
        assert.throws(() => other.exec('BEGIN IMMEDIATE'), /database is locked/);
      });
      other.exec('BEGIN IMMEDIATE'); // released at commit
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
  });
});
