import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions, FastifyInstance } from 'fastify';
import type { Metrics } from '../lib/metrics.ts';
import { type ProtocolError, PROTOCOL_ERRORS, frameworkErrorHandler, rawProtocolError, sendProtocolError } from './error-handler.ts';

/** How long clients may take, and whom to believe about their address. */
export interface ConnectionSettings {
  /** From a request's first byte to the end of its headers, ms (HTTP_HEADERS_TIMEOUT_MS). */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body, ms (HTTP_REQUEST_TIMEOUT_MS); at least `headersTimeoutMs`. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests, ms (HTTP_KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number;
  /** Fastify's `trustProxy` (TRUST_PROXY): false uses the socket's address as the client's. */
  trustProxy: boolean | number | string[];
}

/** Why the server closed a connection itself, as counted on /metrics. */
type ClosedReason = 'timeout' | 'malformed' | 'headers_too_large';

/**
 * The HTTP server's limits and its answers below the routes, as Fastify options:
 *
 * - a request's headers must arrive within `headersTimeoutMs` and its whole body within
 *   `requestTimeoutMs` of its first byte (Node's `headersTimeout` / `requestTimeout`, checked every
 *   `connectionsCheckingInterval`, a quarter of the smaller bound and at most 1 s); then the client
 *   gets 408 and the connection is closed. An idle keep-alive connection is closed after
 *   `keepAliveTimeoutMs`. A WebSocket upgrade is bounded by the headers timeout until it upgrades,
 *   then by the media protocol's join timeout.
 * - malformed HTTP, oversized headers and timeouts are answered on the raw socket with our error
 *   body (never echoing the request), counted in `switchboard_http_connections_closed_total`;
 * - the router's own errors (bad percent-encoding, 414) go through `frameworkErrorHandler`;
 * - Node's missing-Host 400 and Fastify's 503 while closing are left to `installConnectionHandling`,
 *   which answers them with our body.
 */
export function connectionOptions(settings: ConnectionSettings, metrics: Metrics) {
  const closed = metrics.counter(
    'switchboard_http_connections_closed_total',
    'HTTP connections the server closed itself: timeout (headers or body not received in time), malformed (not valid HTTP), headers_too_large.',
    ['reason'],
  );
  const checkEveryMs = Math.max(25, Math.min(1_000, Math.floor(Math.min(settings.headersTimeoutMs, settings.requestTimeoutMs) / 4)));
  return {
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: {
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      connectionsCheckingInterval: checkEveryMs,
      // Node answers a missing Host with an empty 400; installConnectionHandling answers it instead.
      requireHostHeader: false,
    },
    // A number of hops as Fastify's types take it: the nearest `n` proxies are trusted.
    trustProxy: typeof settings.trustProxy === 'number' ? trustHops(settings.trustProxy) : settings.trustProxy,
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const reason: ClosedReason =
        error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'timeout' : error.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : 'malformed';
      closed.inc({ reason });
      // Answer unless a response is already under way on this socket, then close (as Node does).
      const response = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
      const answer: ProtocolError = reason === 'timeout' ? 'request_timeout' : reason;
      if (socket.writable && !response?.headersSent) socket.write(rawProtocolError(answer));
      socket.destroy();
    },
  } satisfies Partial<FastifyHttpOptions<Server>>;
}

/**
 * Answers, with our error body, what Node would answer with its own: `Expect` other than
 * 100-continue (417), CONNECT (404, as any unknown route), an HTTP/1.1 request without Host (400),
 * and requests arriving while the app closes (503 with `Connection: close`, after Fastify's own
 * load shedding, which answers in its own shape, was turned off by `connectionOptions`).
 */
export function installConnectionHandling(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      reply.header('connection', 'close');
      sendProtocolError(reply, 'shutting_down');
      return;
    }
    const raw = request.raw;
    if (raw.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1) {
      reply.header('connection', 'close');
      sendProtocolError(reply, 'missing_host');
      return;
    }
    done();
  });
  app.server.on('checkExpectation', (_request, response: ServerResponse) => {
    const { status, code, message } = PROTOCOL_ERRORS.expectation_failed;
    const body = JSON.stringify({ status: 'error', code, message });
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    response.end(body);
  });
  app.server.on('connect', (_request, socket: Socket) => {
    socket.write(rawProtocolError('connect'));
    socket.destroySoon();
  });
}

function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}
