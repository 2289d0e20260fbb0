import { Worker } from 'node:worker_threads';

/**
 * Copies the SQLite write-ahead log back into the database file from a worker thread with its own
 * connection, so the fsyncs of a checkpoint never stall the event loop that serves requests.
 * PASSIVE checkpoints never block writers; the main connection's auto-checkpoint stays on at a
 * high mark as a safety net should this worker fall behind.
 */
export class SqliteCheckpointer {
  readonly #worker: Worker;
  #closed: Promise<void> | null = null;

  constructor(filename: string, intervalMs = 1000) {
    const source = `
      const { DatabaseSync } = require('node:sqlite');
      const { workerData, parentPort } = require('node:worker_threads');
      const db = new DatabaseSync(workerData.filename);
      db.exec('PRAGMA busy_timeout = 1000');
      const timer = setInterval(() => {
        try { db.exec('PRAGMA wal_checkpoint(PASSIVE)'); } catch {}
      }, workerData.intervalMs);
      parentPort.on('message', () => { clearInterval(timer); db.close(); process.exit(0); });
    `;
    this.#worker = new Worker(source, { eval: true, workerData: { filename, intervalMs } });
    this.#worker.unref();
  }

  close(): Promise<void> {
    this.#closed ??= new Promise((resolve) => {
      this.#worker.ref(); // keep the process alive until the worker has closed its connection
      this.#worker.once('exit', () => resolve());
      this.#worker.postMessage('stop');
    });
    return this.#closed;
  }
}
