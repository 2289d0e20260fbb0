import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Store, openStore } from '../../src/storage/store.ts';

/** A migrated store over its own PGlite (stores.ts's TestStore, which imports this file). */
export interface PgliteStore {
  store: Store;
  databaseUrl: string;
  dataDir: string;
  /** Closes the store, the server and PGlite. */
  close(): Promise<void>;
}

/**
 * A PostgreSQL of our own with pgvector, for the knowledge bases' pgvector search: PGlite
 * (PostgreSQL compiled to WebAssembly, an npm dev dependency) with its pgvector extension, served
 * in this process over the PostgreSQL wire protocol on a loopback port, so the store speaks to it
 * through `pg` as to any server. The Debian PostgreSQL the other tests use has no pgvector.
 *
 * What it cannot stand in for: LISTEN/NOTIFY between connections (its server multiplexes one
 * backend, and notifications are not delivered to a listening client), so runtimes over it use the
 * in-process notifications, as every harness over an injected store does. `vector: false` serves
 * one without the extension loaded (then `pg_available_extensions` has no `vector`).
 */
export async function openPgliteStore(options: { vector: boolean } = { vector: true }): Promise<PgliteStore> {
  const [{ PGlite }, { vector }, { PGLiteSocketServer }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('@electric-sql/pglite-socket'),
  ]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-test-'));
  const pglite = await PGlite.create(options.vector ? { extensions: { vector } } : {});
  const server = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port: 0, maxConnections: 20 });
  try {
    await server.start();
    const port = Number(server.getServerConn().split(':').pop());
    const databaseUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const store = await openStore({ databaseUrl, dataDir, poolSize: 4 });
    return {
      store,
      databaseUrl,
      dataDir,
      async close() {
        await store.close();
        await server.stop();
        await pglite.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await server.stop();
    await pglite.close();
    throw error;
  }
}
