import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Counter } from 'prom-client';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { rawJsonResponse } from '../lib/raw-http.ts';
import { wsDataToBuffer } from '../lib/ws-data.ts';
import type { CallConnection, CallSession } from './call-session.ts';
import { InboundLimiter, MAX_TEXT_MESSAGE_BYTES } from './inbound-limits.ts';
import { JoinRefused, type SessionRegistry } from './session-registry.ts';
import { JOIN_TIMEOUT_MS, PROTOCOL_SAMPLE_RATE, REFUSALS, WEB_CALL_PATH, type RefusalCode } from '../protocol/media.constants.ts';
import type { ServerMessage } from '../protocol/media.messages.ts';
import { parseClientMessage, parseJoin } from './protocol.ts';

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

/** The counters of the inbound limits (docs/media-protocol.md, "Limits"). */
interface InboundCounters {
  audioDroppedSeconds: Counter;
  messagesDropped: Counter<'kind'>;
  floodDisconnections: Counter;
}

function inboundCounters(metrics: Metrics): InboundCounters {
  return {
    audioDroppedSeconds: metrics.counter('switchboard_media_audio_dropped_seconds_total', 'Seconds of call audio dropped because a client sent it faster than real time.'),
    messagesDropped: metrics.counter('switchboard_media_messages_dropped_total', 'Whole call messages dropped over the message rate limits, by kind (audio, text).', ['kind']),
    floodDisconnections: metrics.counter('switchboard_media_flood_disconnections_total', 'Calls cut off because the client sent audio or messages far faster than real time.'),
  };
}

/** Agent audio the socket may hold unsent before we queue instead: 16 KiB = 0.5 s. */
const SOCKET_HIGH_WATER_BYTES = 16_384;
/** Agent audio queued above the socket, in chunks (20 ms each): 25 = 0.5 s; the oldest is dropped beyond. */
const AUDIO_QUEUE_CHUNKS = 25;
/** A client that lets this much pile up unsent is not reading: it is dropped. */
const SOCKET_HARD_LIMIT_BYTES = 1_048_576;
/** After our close frame, how long the client has to answer before the socket is destroyed, ms. */
const CLOSE_GRACE_MS = 2_000;
/** At shutdown, how long the sockets of the ended calls have to finish their close handshake, ms. */
const SHUTDOWN_CLOSE_GRACE_MS = 1_000;
/** A client cut off for flooding is destroyed after this long even if its call's end has not closed it yet, ms. */
const CUT_OFF_DEADLINE_MS = 30_000;

/**
 * The web-call WebSocket endpoint (docs/media-protocol.md) on the app's HTTP server: upgrade on
 * GET /v2/web-call, join handshake, audio and events to and from the call's session. Registered
 * by buildApp so `app.listen()` serves it; closing the app ends every call (server_shutdown).
 */
export function attachWebCallTransport(app: FastifyInstance, registry: SessionRegistry, options: WebCallTransportOptions): void {
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
      // Not ours: leave it to another upgrade listener if there is one, else answer 404.
      if (app.server.listenerCount('upgrade') <= 1) {
        socket.once('finish', () => socket.destroy());
        socket.end(rawJsonResponse(404, { status: 'error', code: 'route_not_found', message: 'No WebSocket endpoint at this path.' }));
      }
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const conn = new WsConnection(ws, heartbeatMs, inbound);
      void handleConnection(conn, registry, log, joinTimeoutMs);
    });
  };
  app.server.on('upgrade', onUpgrade);

  app.addHook('preClose', async () => {
    // End calls first (their results are stored and call.finished goes out), then drop stragglers:
    // the HTTP server cannot finish closing while upgraded sockets stay open. A socket whose call
    // just ended still holds its call_ended event and close frame: it gets a moment to deliver them
    // (destroying it at once discarded them under load, and the client saw only a lost connection).
    await registry.close();
    app.server.off('upgrade', onUpgrade);
    await closedWithin([...wss.clients], SHUTDOWN_CLOSE_GRACE_MS);
    for (const ws of wss.clients) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
}

async function handleConnection(conn: WsConnection, registry: SessionRegistry, log: Logger, joinTimeoutMs: number): Promise<void> {
  const first = await conn.firstMessage(joinTimeoutMs);
  if (first === 'timeout') return conn.refuse('join_timeout', `No join message within ${joinTimeoutMs / 1000} s.`);
  if (first === 'closed') return;
  if (first.binary) return conn.refuse('bad_message', 'The first message must be a JSON join message, not audio.');
  const parsed = parseJoin(first.data.toString('utf8'));
  if (!parsed.ok) return conn.refuse(parsed.code, parsed.message);
  let session: CallSession;
  try {
    session = await registry.join(parsed.join.access_token, conn);
  } catch (error) {
    if (error instanceof JoinRefused) return conn.refuse(error.code, error.message);
    log.error({ err: error }, 'join failed');
    return conn.refuse('internal_error', 'The call could not be joined.');
  }
  conn.attach(session);
}

/**
 * One client socket: join phase, heartbeat, the inbound limits on what the client sends, and a
 * bounded agent-audio queue with backpressure.
 */
class WsConnection implements CallConnection {
  readonly #ws: WebSocket;
  readonly #audio: Buffer[] = [];
  readonly #inbound: { counters: InboundCounters; now: () => number };
  #session: CallSession | undefined;
  #alive = true;
  #heartbeat: ReturnType<typeof setInterval>;
  #closed = false;
  /** Cut off for flooding: nothing more it sends is read. */
  #flooding = false;
  /** Agent audio chunks dropped because the client did not keep up. */
  dropped = 0;

  constructor(ws: WebSocket, heartbeatMs: number, inbound: { counters: InboundCounters; now: () => number }) {
    this.#ws = ws;
    this.#inbound = inbound;
    ws.on('pong', () => (this.#alive = true));
    ws.on('error', () => {}); // 'close' follows; errors (e.g. a too large message) need no more handling
    this.#heartbeat = setInterval(() => {
      if (!this.#alive) {
        // Missed a pong: the client vanished (no FIN, e.g. a network drop).
        ws.terminate();
        return;
      }
      this.#alive = false;
      if (ws.readyState === ws.OPEN) ws.ping();
    }, heartbeatMs);
    this.#heartbeat.unref?.();
    ws.on('close', (code) => {
      this.#closed = true;
      clearInterval(this.#heartbeat);
      this.#audio.length = 0;
      // 1000 / 1001 / 1005: the client closed on purpose; anything else (1006...) is a loss.
      const session = this.#session;
      if (session) session.guard('transport_close', () => session.onClosed(code === 1000 || code === 1001 || code === 1005))();
    });
  }

  /** Waits for the first message, the timeout, or the socket's end. */
  firstMessage(timeoutMs: number): Promise<{ data: Buffer; binary: boolean } | 'timeout' | 'closed'> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish('timeout'), timeoutMs);
      const onMessage = (data: RawData, binary: boolean) => finish({ data: wsDataToBuffer(data), binary });
      const onClose = () => finish('closed');
      const finish = (v: { data: Buffer; binary: boolean } | 'timeout' | 'closed') => {
        clearTimeout(timer);
        this.#ws.off('message', onMessage);
        this.#ws.off('close', onClose);
        resolve(v);
      };
      this.#ws.once('message', onMessage);
      this.#ws.once('close', onClose);
    });
  }

  /**
   * Hands the socket to its call: audio to the pipeline, control messages to the session, each
   * through the inbound limits (docs/media-protocol.md, "Limits"): what exceeds them is dropped
   * unread; a client far beyond them is cut off.
   */
  attach(session: CallSession): void {
    this.#session = session;
    if (this.#closed) {
      session.guard('transport_close', () => session.onClosed(false))();
      return;
    }
    const limits = new InboundLimiter(this.#inbound.now);
    const counters = this.#inbound.counters;
    // What the client sends runs inside the call's error boundary: a failure ends this call only.
    this.#ws.on('message', session.guard('transport_message', (data: RawData, binary: boolean) => {
      if (this.#flooding) return; // already read from the socket before it was paused
      if (binary) {
        const buf = wsDataToBuffer(data);
        const verdict = limits.audio(buf.byteLength >> 1);
        if (verdict.kind === 'flood') return this.#cutOff(session);
        if (verdict.droppedSamples > 0) counters.audioDroppedSeconds.inc(verdict.droppedSamples / PROTOCOL_SAMPLE_RATE);
        if (verdict.messageDropped) counters.messagesDropped.inc({ kind: 'audio' });
        if (verdict.samples > 0) session.onAudio(buf.subarray(0, verdict.samples * 2));
        return;
      }
      const verdict = limits.text();
      if (verdict === 'flood') return this.#cutOff(session);
      if (verdict === 'drop') {
        counters.messagesDropped.inc({ kind: 'text' });
        return; // unanswered: a flood of pings or junk gets nothing back
      }
      const buf = wsDataToBuffer(data);
      const message = buf.byteLength > MAX_TEXT_MESSAGE_BYTES ? null : parseClientMessage(buf.toString('utf8'));
      if (message) session.onMessage(message);
      else this.sendEvent({ type: 'error', code: 'bad_message', message: 'Malformed message; see docs/media-protocol.md.' });
    }));
  }

  /**
   * The client sends far faster than real time: stop reading the socket (what it sends next stays
   * in the kernel's buffers, bounded by TCP), and let the session end the call, which closes the
   * socket with CLOSE.tooFast once the call is stored.
   */
  #cutOff(session: CallSession): void {
    this.#flooding = true;
    clearInterval(this.#heartbeat); // a paused socket reads no pongs; the call's end closes it
    setTimeout(() => this.#ws.terminate(), CUT_OFF_DEADLINE_MS).unref();
    this.#ws.pause();
    this.#inbound.counters.floodDisconnections.inc();
    session.onFlood();
  }

  refuse(code: RefusalCode, message: string): void {
    this.sendEvent({ type: 'error', code, message });
    this.close(REFUSALS[code], code);
  }

  sendEvent(event: ServerMessage): void {
    if (this.#closed || this.#ws.readyState !== this.#ws.OPEN) return;
    if (this.#ws.bufferedAmount > SOCKET_HARD_LIMIT_BYTES) {
      this.#ws.terminate(); // not reading at all: treated as gone
      return;
    }
    this.#ws.send(JSON.stringify(event));
  }

  sendAudio(pcm: Int16Array): void {
    if (this.#closed || this.#ws.readyState !== this.#ws.OPEN) return;
    // Copy: the pipeline's frame may be reused, and ws may hold the buffer until it is written.
    this.#audio.push(Buffer.from(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength)));
    while (this.#audio.length > AUDIO_QUEUE_CHUNKS) {
      this.#audio.shift(); // drop-oldest: late speech is worth less than current speech
      this.dropped += 1;
    }
    this.#drain();
  }

  clearAudio(): void {
    this.#audio.length = 0;
  }

  #drain = (): void => {
    while (this.#audio.length > 0 && !this.#closed && this.#ws.bufferedAmount < SOCKET_HIGH_WATER_BYTES) {
      const chunk = this.#audio.shift()!;
      // The callback runs once the chunk reached the kernel: time to send what waited.
      this.#ws.send(chunk, { binary: true }, this.#drainLater);
    }
  };

  #drainLater = (): void => {
    if (this.#audio.length > 0) setImmediate(this.#drain);
  };

  close(code: number, reason: string): void {
    clearInterval(this.#heartbeat);
    if (this.#ws.readyState === this.#ws.CLOSED) return;
    this.#ws.close(code, reason.slice(0, 120));
    setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS).unref();
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
