import { isAppError } from '../domain/errors.ts';
import type { Call } from '../domain/call.ts';
import type { AgentForCall } from './engine-factory.ts';
import type { Logger } from '../lib/logger.ts';
import { CallSession, type CallConnection, type SessionCallService, type SessionDeps } from './call-session.ts';
import type { RefusalCode } from '../protocol/media.constants.ts';

/** The call service's operations the registry uses. */
export interface JoiningCallService extends SessionCallService {
  joinCall(token: string): Promise<{ call: Call; agent: AgentForCall }>;
}

/** A join the server refuses; the transport sends `error {code, message}` and closes. */
export class JoinRefused extends Error {
  readonly code: RefusalCode;
  constructor(code: RefusalCode, message: string) {
    super(message);
    this.name = 'JoinRefused';
    this.code = code;
  }
}

const TOKEN_CODES = new Set(['token_invalid', 'token_expired', 'token_used']);

export interface SessionRegistryDeps extends Omit<SessionDeps, 'calls' | 'log'> {
  calls: JoiningCallService;
  /** The media component's logger; each call logs through a child with its call id. */
  log: Logger;
}

/**
 * Owns every ongoing call of this process. `close()` (shutdown) refuses new joins and ends every
 * call with `server_shutdown`, storing its results and emitting call.finished as usual.
 */
export class SessionRegistry {
  readonly #d: SessionRegistryDeps;
  readonly #sessions = new Map<string, CallSession>();
  readonly #joining = new Set<Promise<unknown>>();
  #closing: Promise<void> | undefined;

  constructor(deps: SessionRegistryDeps) {
    this.#d = deps;
  }

  /** The media component's logger (the transport logs its refusals here too). */
  get log(): Logger {
    return this.#d.log;
  }

  /** Calls in progress. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The session of an ongoing call, if this process holds it. */
  get(callId: string): CallSession | undefined {
    return this.#sessions.get(callId);
  }

  /**
   * Redeems the token (registered -> ongoing) and starts the call's session on `conn`. Throws
   * JoinRefused with the protocol's code for a bad, expired or used token or during shutdown.
   */
  async join(token: string, conn: CallConnection): Promise<CallSession> {
    if (this.#closing) throw new JoinRefused('server_shutting_down', 'The server is shutting down; try again shortly.');
    const work = this.#join(token, conn);
    this.#joining.add(work);
    try {
      return await work;
    } finally {
      this.#joining.delete(work);
    }
  }

  async #join(token: string, conn: CallConnection): Promise<CallSession> {
    let joined: { call: Call; agent: AgentForCall };
    try {
      joined = await this.#d.calls.joinCall(token);
    } catch (error) {
      if (isAppError(error) && TOKEN_CODES.has(error.code)) throw new JoinRefused(error.code as RefusalCode, error.message);
      this.#d.log.error({ err: error }, 'join failed');
      throw new JoinRefused('internal_error', 'The call could not be joined; try again.');
    }
    const session = new CallSession(joined.call, joined.agent, conn, { ...this.#d, log: this.#d.log.child({ callId: joined.call.call_id }) });
    this.#sessions.set(session.callId, session);
    if (this.#closing) {
      // Shutdown began while the token was being redeemed: end the call cleanly at once.
      void session.end('server_shutdown');
    } else {
      await session.start();
    }
    void session.done.then(() => this.#sessions.delete(session.callId));
    return session;
  }

  /** Idempotent: refuses new joins, ends every call with server_shutdown and waits for their results. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#joining]);
      await Promise.allSettled([...this.#sessions.values()].map((s) => s.end('server_shutdown')));
      await Promise.allSettled([...this.#sessions.values()].map((s) => s.done));
    })();
    return this.#closing;
  }
}
