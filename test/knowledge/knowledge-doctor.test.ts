// `cli doctor` says which vector search knowledge bases use on the configured store (issue 29):
// pgvector where the PostgreSQL server has it (or our role can create it), the scan in the process
// otherwise; found without changing the database. PostgreSQL with pgvector: knowledge-pgvector.test.ts
// (its PGlite), before that file's first test creates the extension.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { inspectPgvector } from '../../src/storage/knowledge-pgvector.ts';
import { runCli } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

interface Report {
  ok: boolean;
  knowledge: { store: string; vector_search: string; detail: string };
}

async function doctor(env: Record<string, string>): Promise<Report> {
  // Engines that need nothing installed, so only the knowledge line can make `ok` false.
  const res = await runCli(['doctor', '--json'], { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy', ...env });
  assert.ok(res.stdout !== '', res.stderr);
  return JSON.parse(res.stdout) as Report;
}

const NO_EMBEDDINGS = 'used once EMBEDDINGS_BASE_URL is set (now lexical retrieval only)';

describe('cli doctor: the knowledge bases vector search', () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-doctor-'));
  });
  after(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('says the search in the process on SQLite, and fails when the PostgreSQL store cannot be asked', async () => {
    const [sqlite, unreachable] = await Promise.all([doctor({ DATA_DIR: dataDir }), doctor({ DATABASE_URL: 'postgres://switchboard@127.0.0.1:9/switchboard' })]);
    assert.deepEqual(sqlite.knowledge, { store: 'sqlite', vector_search: 'in_process', detail: `SQLite: vectors are searched in the process; ${NO_EMBEDDINGS}` });
    assert.equal(sqlite.ok, true);
    assert.equal(unreachable.knowledge.vector_search, 'unknown');
    assert.match(unreachable.knowledge.detail, /^the database could not be asked: .*ECONNREFUSED/);
    assert.equal(unreachable.ok, false);
  });

  for (const kind of STORES.filter((s) => s.name === 'postgres')) {
    describe(`on ${kind.name}`, { skip: kind.skip }, () => {
      let t: TestStore;
      before(async () => {
        t = await openTestStore(kind.name);
      });
      after(async () => {
        await t.close();
      });

      it('says what the server would find at start-up, and why not pgvector', async () => {
        const available = await sql<{ installed_version: string | null }>`select installed_version from pg_available_extensions where name = 'vector'`.execute(t.store.db);
        const [found, report] = await Promise.all([inspectPgvector(t.store.db), doctor({ DATABASE_URL: t.databaseUrl! })]);
        assert.equal(report.knowledge.store, 'postgresql');
        assert.equal(report.ok, true);
        // The test cluster's server may or may not ship pgvector (Debian's does not): the answer follows what it has.
        if (available.rows.length === 0) {
          assert.deepEqual(found, { search: 'in_process', reason: 'the PostgreSQL server has no vector extension (pgvector)' });
          assert.equal(report.knowledge.detail, `vectors are searched in the process: the PostgreSQL server has no vector extension (pgvector); ${NO_EMBEDDINGS}`);
        } else {
          assert.equal(found.search, 'pgvector');
          assert.equal(report.knowledge.vector_search, 'pgvector');
        }
      });
    });
  }
});
