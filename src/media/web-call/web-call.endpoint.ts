/**
 * One web call's WebSocket (docs/media-protocol.md) as a call endpoint: the join phase, the
 * heartbeat, the inbound limits on what the client sends, ping/pong, a bounded agent-audio queue
 * with backpressure, and the mapping of the session's neutral events to the protocol's messages
 * (the transcript window, close codes). Nothing here is seen by the session but the port.
 */
import type { Counter } from 'prom-client';
import type { RawData, WebSocket } from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { bytesToSamples } from '../../voice/frames.ts';
import type { CallMedia } from '../../domain/call.ts';
import type { CallEndpoint, CallEnding, CallEvent, EndpointSink } from '../endpoint.ts';
import { serverMessageOf } from '../codec/media-messages.ts';
import { CLOSE, PROTOCOL_SAMPLE_RATE, REFUSALS, type RefusalCode } from '../../protocol/media.constants.ts';
import type { ServerMessage } from '../../protocol/media.messages.ts';
import { InboundLimiter, MAX_TEXT_MESSAGE_BYTES } from '../codec/inbound-limits.ts';
import { parseClientMessage } from './protocol.ts';

/** The counters of the inbound limits (docs/media-protocol.md, "Limits"). */
export interface InboundCounters {
  audioDroppedSeconds: Counter;
  messagesDropped: Counter<'kind'>;
  floodDisconnections: Counter;
}

/** Agent audio the socket may hold unsent before we queue instead: 16 KiB = 0.5 s. */
const SOCKET_HIGH_WATER_BYTES = 16_384;
/** Agent audio queued above the socket, in chunks (20 ms each): 25 = 0.5 s; the oldest is dropped beyond. */
const AUDIO_QUEUE_CHUNKS = 25;
/** A client that lets this much pile up unsent is not reading: it is dropped. */
const SOCKET_HARD_LIMIT_BYTES = 1_048_576;
/** After our close frame, how long the client has to answer before the socket is destroyed, ms. */
const CLOSE_GRACE_MS = 2_000;
/** A client cut off for flooding is destroyed after this long even if its call's end has not closed it yet, ms. */
const CUT_OFF_DEADLINE_MS = 30_000;

export class WebCallEndpoint implements CallEndpoint {
  readonly transport = 'websocket';
  /** Wideband: the call runs at 16 kHz. */
  readonly sampleRate = 16_000;
  readonly #ws: WebSocket;
  readonly #audio: Buffer[] = [];
  readonly #inbound: { counters: InboundCounters; now: () => number };
  #sink: EndpointSink | undefined;
  #alive = true;
  #heartbeat: ReturnType<typeof setInterval>;
  #closed = false;
  /** Cut off for flooding: nothing more it sends is read. */
  #flooding = false;
  /** The utterance the agent is speaking (the `clear` message names it). */
  #utteranceId = 'utt_0';
  /** Audio traffic both ways: binary messages and their bytes (the call object's `media`). */
  readonly #traffic = { bytesIn: 0, packetsIn: 0, bytesOut: 0, packetsOut: 0 };

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
      if (code === 1000 || code === 1001 || code === 1005) this.#sink?.hangup();
      else this.#sink?.lost();
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
   * Hands the socket to its call: audio to the session, control messages read here, each through
   * the inbound limits (docs/media-protocol.md, "Limits"): what exceeds them is dropped unread; a
   * client far beyond them is cut off.
   */
  attach(sink: EndpointSink): void {
    this.#sink = sink;
    if (this.#closed) {
      sink.lost();
      return;
    }
    const limits = new InboundLimiter(this.#inbound.now);
    const counters = this.#inbound.counters;
    this.#ws.on('message', (data: RawData, binary: boolean) => {
      if (this.#flooding) return; // already read from the socket before it was paused
      if (binary) {
        const buf = wsDataToBuffer(data);
        this.#traffic.packetsIn += 1;
        this.#traffic.bytesIn += buf.byteLength;
        const verdict = limits.audio(buf.byteLength >> 1);
        if (verdict.kind === 'flood') return this.#cutOff(sink);
        if (verdict.droppedSamples > 0) counters.audioDroppedSeconds.inc(verdict.droppedSamples / PROTOCOL_SAMPLE_RATE);
        if (verdict.messageDropped) counters.messagesDropped.inc({ kind: 'audio' });
        if (verdict.samples > 0) sink.audio(bytesToSamples(buf.subarray(0, verdict.samples * 2)));
        return;
      }
      const verdict = limits.text();
      if (verdict === 'flood') return this.#cutOff(sink);
      if (verdict === 'drop') {
        counters.messagesDropped.inc({ kind: 'text' });
        return; // unanswered: a flood of pings or junk gets nothing back
      }
      const buf = wsDataToBuffer(data);
      const message = buf.byteLength > MAX_TEXT_MESSAGE_BYTES ? null : parseClientMessage(buf.toString('utf8'));
      if (!message) this.#send({ type: 'error', code: 'bad_message', message: 'Malformed message; see docs/media-protocol.md.' });
      else if (message.type === 'hangup') sink.hangup();
      else if (message.type === 'ping') this.#send({ type: 'pong', id: message.id ?? null });
    });
  }

  /**
   * The client sends far faster than real time: stop reading the socket (what it sends next stays
   * in the kernel's buffers, bounded by TCP), and let the session end the call, which closes the
   * socket with CLOSE.tooFast once the call is stored.
   */
  #cutOff(sink: EndpointSink): void {
    this.#flooding = true;
    clearInterval(this.#heartbeat); // a paused socket reads no pongs; the call's end closes it
    setTimeout(() => this.#ws.terminate(), CUT_OFF_DEADLINE_MS).unref();
    this.#ws.pause();
    this.#inbound.counters.floodDisconnections.inc();
    sink.flood();
  }

  /** A join refused: the `error` message, then the refusal's close code. */
  refuse(code: RefusalCode, message: string): void {
    this.#send({ type: 'error', code, message });
    this.#close(REFUSALS[code], code);
  }

  send(event: CallEvent): void {
    if (event.type === 'agent_talking') this.#utteranceId = event.utteranceId;
    this.#send(serverMessageOf(event, this.transport));
  }

  playAudio(pcm: Int16Array): void {
    if (this.#closed || this.#ws.readyState !== this.#ws.OPEN) return;
    // Copy: the pipeline's frame may be reused, and ws may hold the buffer until it is written.
    this.#audio.push(Buffer.from(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength)));
    // Drop-oldest: late speech is worth less than current speech.
    while (this.#audio.length > AUDIO_QUEUE_CHUNKS) this.#audio.shift();
    this.#drain();
  }

  /** Barge-in: the queued agent audio is dropped, and the client told to drop what it holds. */
  clear(): void {
    this.#audio.length = 0;
    this.#send({ type: 'clear', utterance_id: this.#utteranceId });
  }

  /** 16-bit PCM at 16 kHz over TCP: nothing is lost, and no packet timing to measure jitter from. */
  mediaStats(): CallMedia {
    const t = this.#traffic;
    return { transport: this.transport, codec: 'pcm16', sample_rate: PROTOCOL_SAMPLE_RATE, bytes_in: t.bytesIn, bytes_out: t.bytesOut, packets_in: t.packetsIn, packets_out: t.packetsOut, packets_lost: 0, jitter_ms: null };
  }

  /** `call_ended`, then the close code of how the call ended (docs/media-protocol.md, "Close codes"). */
  end(ending: CallEnding): void {
    this.#send({ type: 'call_ended', call_status: ending.status, disconnection_reason: ending.reason });
    this.#close(closeCodeOf(ending), ending.reason);
  }

  #send(message: ServerMessage): void {
    if (this.#closed || this.#ws.readyState !== this.#ws.OPEN) return;
    if (this.#ws.bufferedAmount > SOCKET_HARD_LIMIT_BYTES) {
      this.#ws.terminate(); // not reading at all: treated as gone
      return;
    }
    this.#ws.send(JSON.stringify(message));
  }

  #drain = (): void => {
    while (this.#audio.length > 0 && !this.#closed && this.#ws.bufferedAmount < SOCKET_HIGH_WATER_BYTES) {
      const chunk = this.#audio.shift()!;
      this.#traffic.packetsOut += 1;
      this.#traffic.bytesOut += chunk.byteLength;
      // The callback runs once the chunk reached the kernel: time to send what waited.
      this.#ws.send(chunk, { binary: true }, this.#drainLater);
    }
  };

  #drainLater = (): void => {
    if (this.#audio.length > 0) setImmediate(this.#drain);
  };

  #close(code: number, reason: string): void {
    clearInterval(this.#heartbeat);
    if (this.#ws.readyState === this.#ws.CLOSED) return;
    this.#ws.close(code, reason.slice(0, 120));
    setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS).unref();
  }
}

/** The close code that follows `call_ended`: the flood's, an unavailable engine's, a failure's or a normal one. */
function closeCodeOf(ending: CallEnding): number {
  if (ending.reason === 'error_client_flood') return CLOSE.tooFast;
  if (ending.reason === 'error_engine_unavailable') return CLOSE.unavailable;
  return ending.status === 'error' ? CLOSE.serverError : CLOSE.normal;
}
