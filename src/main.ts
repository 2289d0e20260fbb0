import { ConfigError, loadConfig } from './config/config.ts';
import { buildApp } from './app.ts';
import { createLogger } from './lib/logger.ts';
import { createRuntime } from './runtime.ts';
import { PeriodicTask } from './lib/periodic.ts';
import { logEngineAvailability } from './media/media-runtime.ts';
import { ServerLock, ServerLockedError } from './storage/server-lock.ts';

/** Idempotency keys and old webhook logs are pruned this often (and once at start). */
const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

/** Starts the service: config -> store -> services -> HTTP and background work; stops on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`switchboard: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  let lock: ServerLock | null = null;
  if (config.databaseUrl === null) {
    try {
      lock = ServerLock.acquire(config.dataDir);
    } catch (error) {
      if (error instanceof ServerLockedError) {
        process.stderr.write(`switchboard: ${error.message}\n`);
        process.exit(1);
      }
      throw error;
    }
  }

  // The one root logger: Fastify, the runtime and every component log through children of it.
  const log = createLogger({ level: config.logLevel });
  const runtime = await createRuntime(config, { logger: log });
  await runtime.services.webhooks.reencryptSecrets(); // after a server-key rotation
  const app = await buildApp(runtime, { processMetrics: true });
  const sweeper = new PeriodicTask(
    () => runtime.services.calls.sweepUnjoined(),
    config.tokenSweepIntervalMs,
    (error) => log.error({ err: error }, 'token sweep failed'),
  );
  const housekeeping = new PeriodicTask(
    () => runtime.services.housekeeping.run(),
    HOUSEKEEPING_INTERVAL_MS,
    (error) => log.error({ err: error }, 'housekeeping failed'),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const forced = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 1000);
    forced.unref();
    try {
      await runtime.media.sessions.close(); // ongoing calls end with server_shutdown; call.finished still goes out
      await app.close(); // stops accepting, lets in-flight requests finish
      await sweeper.close();
      await housekeeping.close();
      await runtime.services.webhookDispatcher.close();
      await runtime.close();
      lock?.release();
      log.info('stopped');
    } finally {
      clearTimeout(forced);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  await logEngineAvailability(log.child({ component: 'providers' }), config.media.providers);
  if (config.webhooks.worker) await runtime.services.webhookDispatcher.start();
  void housekeeping.runNow();
  log.info({ store: runtime.store.dialect, dataDir: config.dataDir }, 'switchboard ready');
}

main().catch((error: unknown) => {
  process.stderr.write(`switchboard: failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
