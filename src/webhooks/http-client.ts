import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { DESTINATION_REFUSED, type DestinationPolicy } from './destination-policy.ts';

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
  error: string | null;
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
}

export interface WebhookHttpClientOptions {
  policy: DestinationPolicy;
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Sockets per host:port (default 16); the worker caps each endpoint itself, so this is its whole concurrency. */
  maxSocketsPerHost?: number;
}

/**
 * POSTs a delivery: SSRF-checked on the address actually connected to, no redirects followed,
 * connect and total timeouts, response read capped, and abortable. Keep-alive connections are reused.
 */
export class WebhookHttpClient {
  readonly #options: WebhookHttpClientOptions;
  readonly #http: http.Agent;
  readonly #https: https.Agent;

  constructor(options: WebhookHttpClientOptions) {
    this.#options = options;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerHost ?? 16, maxFreeSockets: 16, scheduling: 'lifo' as const };
    this.#http = new http.Agent(agentOptions);
    this.#https = new https.Agent(agentOptions);
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
    const first = await this.#attempt(url, headers, body, started, signal, options);
    // A kept-alive connection the receiver had just closed: resend once on a fresh one (Node's advice).
    if (first.reusedSocketReset) {
      signal?.throwIfAborted();
      return (await this.#attempt(url, headers, body, started, signal, options)).result;
    }
    return first.result;
  }

  #attempt(
    url: string,
    headers: Record<string, string>,
    body: string,
    started: number,
    signal: AbortSignal | undefined,
    options: SendOptions,
  ): Promise<{ result: SendResult; reusedSocketReset: boolean }> {
    const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
    const fail = (failure: FailureKind, error: string, reusedSocketReset = false) => ({
      result: { statusCode: null, latencyMs: Math.round(performance.now() - started), failure, error, retryAfterMs: null, excerpt: null },
      reusedSocketReset,
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(fail('refused', 'destination refused: not a valid URL'));
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.resolve(fail('refused', 'destination refused: not http(s)'));
    const literal = this.#options.policy.literalRefusal(target.hostname);
    if (literal) return Promise.resolve(fail('refused', `destination refused: ${literal}`));

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
        agent: target.protocol === 'https:' ? this.#https : this.#http,
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
        if (error.code === DESTINATION_REFUSED) return finish(fail('refused', error.message));
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
    this.#http.destroy();
    this.#https.destroy();
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
