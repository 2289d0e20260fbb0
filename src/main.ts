import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './config/config.ts';
import { EnvFileError, environment } from './config/env-file.ts';
import { buildApp } from './app.ts';
import { createLogger } from './lib/logger.ts';
import { createRuntime } from './runtime.ts';
import { PeriodicTask } from './lib/periodic.ts';
import { logEngineAvailability } from './media/media-runtime.ts';
import { installProcessGuard } from './media/call-scope.ts';
import { ServerLock, ServerLockedError } from './storage/server-lock.ts';

/** Idempotency keys and old webhook logs are pruned this often (and once at start). */
const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;
/** At shutdown, the calls may take up to this share of SHUTDOWN_TIMEOUT_MS to end and store their results. */
const CALLS_SHARE = 0.5;
/**
 * At shutdown, what is kept for closing the speech engines and the store after the webhook
 * deliveries' grace, in ms: 1 000, or a quarter of SHUTDOWN_TIMEOUT_MS when that is less.
 */
const CLOSE_RESERVE_MS = 1_000;

/**
 * Starts the service: config -> store -> services -> HTTP and background work. Stops on SIGTERM or
 * SIGINT, each step within its share of SHUTDOWN_TIMEOUT_MS: exits 0 once everything has closed,
 * or 1 at SHUTDOWN_TIMEOUT_MS, naming the unfinished step.
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(environment());
  } catch (error) {
    if (error instanceof ConfigError || error instanceof EnvFileError) {
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
  // Lines for a person at a terminal, JSON for a log collector (LOG_FORMAT=auto).
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
  const log = createLogger({ level: config.logLevel, ...(pretty ? { pretty: { colour: process.stdout.isTTY === true } } : {}) });
  const runtime = await createRuntime(config, { logger: log });
  // The last resort of the per-call error boundary (src/media/call-scope.ts): a stray error ends
  // its call, never the process and every call of every tenant with it.
  installProcessGuard(
    log,
    runtime.metrics.counter('switchboard_uncaught_errors_total', 'Uncaught exceptions and unhandled rejections the process survived, by kind and by whether a call owned them (each one is a bug).', ['kind', 'scope']),
  );
  await runtime.services.webhooks.reencryptSecrets(); // after a server-key rotation
  await runtime.services.phoneNumbers.reencryptSecrets();
  const app = await buildApp(runtime, { processMetrics: true });
  const sweeper = new PeriodicTask(
    () => runtime.services.lifecycle.sweepUnjoined(),
    config.tokenSweepIntervalMs,
    (error) => log.error({ err: error }, 'token sweep failed'),
  );
  // Leases on the calls and test runs this server holds, renewed every third of their TTL; those of
  // lost servers (lapsed leases; on SQLite, any left by a previous process) ended at start and periodically.
  const leaseRenewal = new PeriodicTask(
    () => Promise.all([runtime.media.sessions.renewLeases(), runtime.services.tests.renewLeases()]),
    Math.max(100, Math.floor(config.callLeaseTtlMs / 3)),
    (error) => log.error({ err: error }, 'renewing call leases failed'),
  );
  const recovery = new PeriodicTask(
    () => Promise.all([runtime.media.sessions.recoverLapsed(), runtime.services.tests.recoverLapsed()]),
    config.callRecoveryIntervalMs,
    (error) => log.error({ err: error }, 'recovering calls of lost servers failed'),
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
    const started = performance.now();
    const timeoutMs = config.shutdownTimeoutMs;
    log.info({ signal, timeoutMs }, 'shutting down');
    const left = () => timeoutMs - (performance.now() - started);
    // In order, each within its share of the bound (docs/configuration.md, SHUTDOWN_TIMEOUT_MS): calls end first
    // (server_shutdown; the post-call analysis is cut off in time for their results to be stored
    // and call.finished recorded within half the bound), then the HTTP server lets in-flight
    // requests finish, then the background work stops; webhook sends in flight get what is left
    // but a reserve, then are aborted and stay pending (sent again by another worker or at the next
    // start); then the speech engines and the store close.
    const steps: Array<{ name: string; run: () => Promise<void> | void }> = [
      { name: 'calls', run: () => runtime.media.sessions.close({ graceMs: timeoutMs * CALLS_SHARE }) },
      { name: 'http server', run: () => app.close() },
      { name: 'periodic tasks', run: () => Promise.all([sweeper.close(), housekeeping.close(), leaseRenewal.close(), recovery.close()]).then(() => undefined) },
      {
        name: 'webhook deliveries',
        run: () => runtime.services.webhookDispatcher.close({ graceMs: Math.max(0, left() - Math.min(CLOSE_RESERVE_MS, timeoutMs / 4)) }),
      },
      { name: 'speech engines and store', run: () => runtime.close() },
      { name: 'server lock', run: () => lock?.release() },
    ];
    let step = 0;
    // Armed until the process exits: whatever hangs, the process is gone shortly after the bound.
    const forced = setTimeout(() => {
      log.error(
        { unfinished: steps[step]?.name, notStarted: steps.slice(step + 1).map((s) => s.name), timeoutMs },
        'shutdown timed out; exiting',
      );
      process.exit(1);
    }, timeoutMs);
    let failed = false;
    for (; step < steps.length; step++) {
      try {
        await steps[step]!.run();
      } catch (error) {
        failed = true;
        log.error({ err: error, step: steps[step]!.name }, 'shutdown step failed');
      }
    }
    clearTimeout(forced);
    // Everything this process started is closed now, so exit rather than wait on the event loop:
    // a handle left open by mistake once kept a stopped server running for good. What is still
    // open is logged (stdio pipes included) so such a leak shows.
    log.info({ durationMs: Math.round(performance.now() - started), openResources: process.getActiveResourcesInfo() }, 'stopped');
    process.exit(failed ? 1 : 0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  // Before the first request: update-call pushes and key revocations from the other servers.
  await runtime.notifications.start();
  await app.listen({ port: config.port, host: config.host });
  await logEngineAvailability(log.child({ component: 'providers' }), config.media.providers, config.media.providerProbeTimeoutMs, config.knowledge.embeddings);
  // The embedded recogniser's decoders load now, not when the first caller speaks.
  runtime.media.providers.stt.warm?.();
  if (config.webhooks.worker) await runtime.services.webhookDispatcher.start();
  void housekeeping.runNow();
  void recovery.runNow();
  // Knowledge sources a stopped server left in progress are ingested again (docs/knowledge-bases.md).
  runtime.services.knowledge.resume().catch((error: unknown) => log.warn({ err: error }, 'knowledge sources not resumed'));
  // URL sources of knowledge bases with enable_auto_refresh are fetched again every 12 hours.
  runtime.services.knowledge.startRefreshing();
  const urls = pageUrls(config.port === 0 ? `http://${urlHost(config.host)}:${(app.server.address() as AddressInfo).port}` : config.publicBaseUrl, config.demoApiKey !== null);
  // One line for the person who ran `npm start`, beside the JSON logs on stdout (stderr, so
  // stdout stays JSON); shown where LOG_LEVEL shows info. Written before the ready log line.
  if (log.isLevelEnabled('info')) process.stderr.write(`${startLine(urls)}\n`);
  log.info({ store: runtime.store.dialect, dataDir: config.dataDir, urls }, 'switchboard ready');
}

/** Where the pages are, from the address people reach the server at. */
function pageUrls(base: string, demo: boolean): { dashboard: string; demo: string | null; docs: string } {
  const root = base.replace(/\/+$/, '');
  return { dashboard: `${root}/dashboard`, demo: demo ? `${root}/demo` : null, docs: `${root}/docs` };
}

/** `switchboard: ready. Dashboard http://...; demo ...; API reference ...`, in one line. */
function startLine(urls: ReturnType<typeof pageUrls>): string {
  const demo = urls.demo ?? 'off (set DEMO_API_KEY to turn it on)';
  return `switchboard: ready. Dashboard ${urls.dashboard} - demo ${demo} - API reference ${urls.docs}`;
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

main().catch((error: unknown) => {
  process.stderr.write(`switchboard: failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
