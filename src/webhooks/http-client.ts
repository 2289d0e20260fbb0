import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { DESTINATION_REFUSED, refusedMessage, type DestinationPolicy } from './destination-policy.ts';

/** Bytes of a response read at most; the rest is discarded with the connection. */
export const RESPONSE_READ_LIMIT_BYTES = 64 * 1024;
/** Bytes of a response kept for the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export type FailureKind = 'refused' | 'timeout' | 'network' | 'http';

export interface SendResult {
  /** HTTP status, or null when no response arrived. */
  statusCode: number | null;
  latencyMs: number;
  /** Null on a 2xx. */
  failure: FailureKind | null;
  /** What the tenant is told (a delivery's last_error, a function's result): never a resolved address. */
  error: string | null;
  /** A refused destination's detail (the name and what it resolved to): for the operator's log only. */
  detail?: string;
  /** From `Retry-After` (seconds or HTTP date), when present and valid. */
  retryAfterMs: number | null;
  excerpt: string | null;
  /** The response body as read (at most `readLimitBytes`), when SendOptions.keepBody asked for it. */
  body?: Buffer;
  /** The body was longer than what was read (the rest was discarded with the connection). */
  bodyCut?: boolean;
}

/** Per-request settings of `send` (custom functions use them; deliveries use the defaults). */
export interface SendOptions {
  /** Default POST. */
  method?: 'POST' | 'PUT' | 'PATCH';
  /** Total time allowed for this request, ms; default the client's `timeoutMs`. */
  timeoutMs?: number;
  /** Keep the body read (up to RESPONSE_READ_LIMIT_BYTES) in `SendResult.body`; default false. */
  keepBody?: boolean;
  /**
   * The connection pool to use (custom functions name the account): each pool has its own
   * sockets, `maxSocketsPerHost` per host:port, so that one tenant's backend that never answers
   * holds only that tenant's sockets. Default: the client's shared pool.
   */
  pool?: string;
}

export interface WebhookHttpClientOptions {
  policy: DestinationPolicy;
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Sockets per host:port and pool (default 16); the worker caps each endpoint itself, so this is its whole concurrency. */
  maxSocketsPerHost?: number;
  /** Named pools kept (SendOptions.pool; default 1024): beyond, an idle one is closed to make room. */
  maxPools?: number;
}

/** The agents of one connection pool, and its requests in flight. */
interface Pool {
  http: http.Agent;
  https: https.Agent;
  active: number;
}

/**
 * POSTs a delivery: SSRF-checked on the address actually connected to, no redirects followed,
 * connect and total timeouts, response read capped, and abortable. Keep-alive connections are reused.
 */
export class WebhookHttpClient {
  readonly #options: WebhookHttpClientOptions;
  readonly #shared: Pool;
  /** Named pools, least recently used first. */
  readonly #pools = new Map<string, Pool>();

  constructor(options: WebhookHttpClientOptions) {
    this.#options = options;
    this.#shared = this.#newPool();
  }

  #newPool(): Pool {
    const agentOptions = { keepAlive: true, maxSockets: this.#options.maxSocketsPerHost ?? 16, maxFreeSockets: 16, scheduling: 'lifo' as const };
    return { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions), active: 0 };
  }

  /** The pool named `name` (made on first use; the least recently used idle pool makes room), or the shared one. */
  #pool(name: string | undefined): Pool {
    if (name === undefined) return this.#shared;
    let pool = this.#pools.get(name);
    if (pool) {
      this.#pools.delete(name);
      this.#pools.set(name, pool);
      return pool;
    }
    if (this.#pools.size >= (this.#options.maxPools ?? 1024)) {
      const idle = [...this.#pools].find(([, p]) => p.active === 0);
      // Every pool busy (more tenants at once than pools): this request shares the common pool.
      if (!idle) return this.#shared;
      this.#pools.delete(idle[0]);
      idle[1].http.destroy();
      idle[1].https.destroy();
    }
    pool = this.#newPool();
    this.#pools.set(name, pool);
    return pool;
  }

  /**
   * Sends one attempt and resolves with what came of it; never rejects, except when `signal`
   * aborts before the attempt has an outcome: then the request is destroyed at once and the
   * promise rejects with the signal's reason (an aborted send is no attempt: the caller decides
   * what becomes of the delivery).
   */
  async send(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal, options: SendOptions = {}): Promise<SendResult> {
    signal?.throwIfAborted();
    const started = performance.now();
    const pool = this.#pool(options.pool);
    pool.active += 1;
    try {
      const first = await this.#attempt(url, headers, body, started, signal, options, pool);
      // A kept-alive connection the receiver had just closed: resend once on a fresh one (Node's advice).
      if (first.reusedSocketReset) {
        signal?.throwIfAborted();
        return (await this.#attempt(url, headers, body, started, signal, options, pool)).result;
      }
      return first.result;
    } finally {
      pool.active -= 1;
    }
  }

  #attempt(
    url: string,
    headers: Record<string, string>,
    body: string,
    started: number,
    signal: AbortSignal | undefined,
    options: SendOptions,
    pool: Pool,
  ): Promise<{ result: SendResult; reusedSocketReset: boolean }> {
    const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
    const fail = (failure: FailureKind, error: string, reusedSocketReset = false, detail?: string) => ({
      result: { statusCode: null, latencyMs: Math.round(performance.now() - started), failure, error, retryAfterMs: null, excerpt: null, ...(detail ? { detail } : {}) },
      reusedSocketReset,
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(fail('refused', 'destination refused: not a valid URL'));
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.resolve(fail('refused', 'destination refused: not http(s)'));
    const literal = this.#options.policy.literalRule(target.hostname);
    if (literal) return Promise.resolve(fail('refused', refusedMessage(literal.rule), false, literal.detail));

    const payload = Buffer.from(body, 'utf8');
    const transport = target.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        clearTimeout(total);
        if (connectTimer) clearTimeout(connectTimer);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const finish = (value: { result: SendResult; reusedSocketReset: boolean }) => {
        if (settle()) resolve(value);
      };
      const onAbort = () => {
        if (!settle()) return;
        reject(signal!.reason);
        request.destroy();
      };
      let connectTimer: NodeJS.Timeout | null = null;
      const request = transport.request(target, {
        method: options.method ?? 'POST',
        agent: target.protocol === 'https:' ? pool.https : pool.http,
        headers: { ...headers, 'content-length': String(payload.length) },
        lookup: this.#options.policy.lookup,
      });
      const total = setTimeout(() => {
        finish(fail('timeout', `no complete response within ${timeoutMs} ms`));
        request.destroy();
      }, timeoutMs);
      request.on('socket', (socket) => {
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => {
          finish(fail('timeout', `could not connect within ${this.#options.connectTimeoutMs} ms`));
          request.destroy();
        }, this.#options.connectTimeoutMs);
        socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
          if (connectTimer) clearTimeout(connectTimer);
        });
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === DESTINATION_REFUSED) return finish(fail('refused', error.message, false, (error as { detail?: string }).detail));
        const reset = request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        finish(fail('network', describeNetworkError(error), reset));
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        const keep = options.keepBody === true;
        let read = 0;
        const done = () => {
          const statusCode = response.statusCode ?? 0;
          const ok = statusCode >= 200 && statusCode < 300;
          const excerpt = read > 0 ? Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8') : null;
          finish({
            result: {
              statusCode,
              latencyMs: Math.round(performance.now() - started),
              failure: ok ? null : 'http',
              error: ok ? null : describeStatus(statusCode),
              retryAfterMs: parseRetryAfter(response.headers['retry-after']),
              excerpt,
              ...(keep ? { body: Buffer.concat(chunks).subarray(0, RESPONSE_READ_LIMIT_BYTES), bodyCut: read > RESPONSE_READ_LIMIT_BYTES } : {}),
            },
            reusedSocketReset: false,
          });
        };
        response.on('data', (chunk: Buffer) => {
          if (read < (keep ? RESPONSE_READ_LIMIT_BYTES : RESPONSE_EXCERPT_BYTES)) chunks.push(chunk);
          read += chunk.length;
          if (read > RESPONSE_READ_LIMIT_BYTES) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', () => done());
        response.on('aborted', () => done());
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      request.end(payload);
    });
  }

  /** Closes kept-alive connections; idempotent. */
  close(): void {
    for (const pool of [this.#shared, ...this.#pools.values()]) {
      pool.http.destroy();
      pool.https.destroy();
    }
    this.#pools.clear();
  }
}

function describeStatus(code: number): string {
  if (code >= 300 && code < 400) return `HTTP ${code}: redirects are not followed`;
  return `HTTP ${code}`;
}

function describeNetworkError(error: NodeJS.ErrnoException): string {
  return error.code ? `${error.code}: ${error.message}`.slice(0, 300) : error.message.slice(0, 300);
}

/** `Retry-After` in milliseconds from now: delta-seconds or an HTTP date; null if absent or invalid. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}
