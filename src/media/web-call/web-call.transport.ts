import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { rawJsonResponse } from '../../lib/raw-http.ts';
import { CallRefused, type RefusalReason, type SessionRegistry } from '../session-registry.ts';
import { type Transport, type TransportContext, upgradeClaimed } from '../transport.ts';
import { JOIN_TIMEOUT_MS, WEB_CALL_PATH, type RefusalCode } from '../../protocol/media.constants.ts';
import { parseJoin } from './protocol.ts';
import { type InboundCounters, WebCallEndpoint } from './web-call.endpoint.ts';

export interface WebCallTransportOptions {
  /** The runtime's registry: audio and messages dropped by the inbound limits, clients cut off for flooding. */
  metrics: Metrics;
  /** Largest message accepted, bytes; default 64 KiB (2 s of audio). Larger ones close the socket (1009). */
  maxPayloadBytes?: number;
  /** WebSocket ping interval, ms; a client that misses one pong is dropped; default 2 000. */
  heartbeatMs?: number;
  /** How long the first (join) message may take, ms; default 5 000 (the protocol's). */
  joinTimeoutMs?: number;
  /** Monotonic ms for the inbound limits; default performance.now. */
  now?: () => number;
}

function inboundCounters(metrics: Metrics): InboundCounters {
  return {
    audioDroppedSeconds: metrics.counter('switchboard_media_audio_dropped_seconds_total', 'Seconds of call audio dropped because a client sent it faster than real time.'),
    messagesDropped: metrics.counter('switchboard_media_messages_dropped_total', 'Whole call messages dropped over the message rate limits, by kind (audio, text).', ['kind']),
    floodDisconnections: metrics.counter('switchboard_media_flood_disconnections_total', 'Calls cut off because the client sent audio or messages far faster than real time.'),
  };
}

/** At shutdown, how long the sockets of the ended calls have to finish their close handshake, ms. */
const SHUTDOWN_CLOSE_GRACE_MS = 1_000;

/** How a refusal of the registry is told on the wire (the table in docs/media-protocol.md). */
const REFUSAL_CODES: Record<RefusalReason, RefusalCode> = {
  token_invalid: 'token_invalid',
  token_expired: 'token_expired',
  token_used: 'token_used',
  shutting_down: 'server_shutting_down',
  recogniser_busy: 'recogniser_busy',
  failed: 'internal_error',
};

/** The web call's transport: browsers and the Node client join with an access token over a WebSocket. */
export const webCallTransport: Transport = {
  id: 'websocket',
  start(context: TransportContext) {
    return attachWebCallTransport(context, { metrics: context.metrics });
  },
};

/**
 * The web-call WebSocket endpoint (docs/media-protocol.md) on the app's HTTP server: upgrade on
 * GET /v2/web-call, the join handshake, then the call's session runs on a WebCallEndpoint. Its
 * `close()` stops taking upgrades and closes the sockets left (the calls themselves are ended by
 * the runtime's registry, before: a transport never shuts the registry down).
 */
export function attachWebCallTransport(context: TransportContext, options: WebCallTransportOptions): { close(): Promise<void> } {
  const { server, registry } = context;
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes ?? 65_536, perMessageDeflate: false, clientTracking: true });
  const log = registry.log;
  // A handshake ws refuses (method, Upgrade, key or version): the service's error body, not ws's text.
  wss.on('wsClientError', (error, socket, request) => {
    const body = { status: 'error', code: 'invalid_upgrade', message: `${error.message}.` };
    socket.once('finish', () => socket.destroy());
    socket.end(rawJsonResponse(request.method === 'GET' ? 400 : 405, body, { 'Sec-WebSocket-Version': '13, 8' }));
  });
  const heartbeatMs = options.heartbeatMs ?? 2_000;
  const joinTimeoutMs = options.joinTimeoutMs ?? JOIN_TIMEOUT_MS;
  const inbound = { counters: inboundCounters(options.metrics), now: options.now ?? (() => performance.now()) };

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const pathname = (request.url ?? '').split('?')[0];
    if (pathname !== WEB_CALL_PATH) {
      // Not ours: another transport may take it (claimUpgrade, in its own listener); else 404.
      setImmediate(() => {
        if (upgradeClaimed(request) || socket.destroyed) return;
        socket.once('finish', () => socket.destroy());
        socket.end(rawJsonResponse(404, { status: 'error', code: 'route_not_found', message: 'No WebSocket endpoint at this path.' }));
      });
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const endpoint = new WebCallEndpoint(ws, heartbeatMs, inbound);
      void handleConnection(endpoint, registry, log, joinTimeoutMs);
    });
  };
  server.on('upgrade', onUpgrade);

  let closing: Promise<void> | undefined;
  return {
    close() {
      // The calls have ended by now (the runtime ends them first): a socket whose call just ended
      // still holds its call_ended event and close frame, and gets a moment to deliver them
      // (destroying it at once discarded them under load); stragglers are dropped, since the HTTP
      // server cannot finish closing while upgraded sockets stay open.
      closing ??= (async () => {
        server.off('upgrade', onUpgrade);
        await closedWithin([...wss.clients], SHUTDOWN_CLOSE_GRACE_MS);
        for (const ws of wss.clients) ws.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      })();
      return closing;
    },
  };
}

async function handleConnection(endpoint: WebCallEndpoint, registry: SessionRegistry, log: Logger, joinTimeoutMs: number): Promise<void> {
  const first = await endpoint.firstMessage(joinTimeoutMs);
  if (first === 'timeout') return endpoint.refuse('join_timeout', `No join message within ${joinTimeoutMs / 1000} s.`);
  if (first === 'closed') return;
  if (first.binary) return endpoint.refuse('bad_message', 'The first message must be a JSON join message, not audio.');
  const parsed = parseJoin(first.data.toString('utf8'));
  if (!parsed.ok) return endpoint.refuse(parsed.code, parsed.message);
  try {
    // The registry attaches the endpoint to the call's session once it runs.
    await registry.join(parsed.join.access_token, endpoint);
  } catch (error) {
    if (error instanceof CallRefused) return endpoint.refuse(REFUSAL_CODES[error.reason], error.message);
    log.error({ err: error }, 'join failed');
    return endpoint.refuse('internal_error', 'The call could not be joined.');
  }
}

/** Resolves once every socket has closed, or after `ms`, whichever comes first. */
async function closedWithin(sockets: WebSocket[], ms: number): Promise<void> {
  const open = sockets.filter((ws) => ws.readyState !== ws.CLOSED);
  if (open.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(open.map((ws) => new Promise<void>((resolve) => ws.once('close', () => resolve())))),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}
