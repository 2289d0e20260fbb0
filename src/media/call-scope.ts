/**
 * The per-call error boundary. Everything one call runs (its session's start, the callbacks a
 * transport or a peer's socket hands it, the timers and promises they start) runs inside the
 * call's scope, an AsyncLocalStorage context. An error nothing caught there ends that call, not
 * the process: the explicit guards (CallSession.guard) end it with the reason that names what
 * failed; the process-wide handlers installed by main.ts (installProcessGuard) find the call of a
 * stray exception or rejection through its async context and end it `error_unknown`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Counter } from 'prom-client';
import type { Logger } from '../lib/logger.ts';

/** What the boundary knows of a call. */
export interface CallScope {
  readonly callId: string;
  /** Logs `error` with the call id, counts it and ends the call (`where`: the part that failed). */
  crash(where: string, error: unknown): void;
}

const scopes = new AsyncLocalStorage<CallScope>();

/** Runs `fn` inside `scope`: what it starts (timers, promises, sockets) belongs to the call. */
export function runInCallScope<T>(scope: CallScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/** The call whose work is running now, if any. */
export function currentCallScope(): CallScope | undefined {
  return scopes.getStore();
}

/**
 * The process's last resort (main.ts installs it; tests do not, so that a stray rejection fails
 * them): an uncaught exception or unhandled rejection is logged and counted, and the call it
 * belongs to, if any, ends `error_unknown`. The process goes on: ending it would end every call
 * of every tenant. Each one is a bug to fix: alert on switchboard_uncaught_errors_total.
 */
export function installProcessGuard(log: Logger, counter: Counter<'kind' | 'scope'>): () => void {
  const handle = (kind: 'exception' | 'rejection') => (error: unknown) => {
    const scope = currentCallScope();
    counter.inc({ kind, scope: scope ? 'call' : 'process' });
    if (scope) {
      scope.crash(kind === 'exception' ? 'uncaught_exception' : 'unhandled_rejection', error);
      return;
    }
    log.error({ err: error, kind }, 'uncaught error outside any call: logged, the server goes on');
  };
  const onException = handle('exception');
  const onRejection = handle('rejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
