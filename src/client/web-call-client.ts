/**
 * A Node client of the web-call media protocol v1 (docs/media-protocol.md): joins a call with its
 * access token, streams user audio in real time in 20 ms frames (silence when there is nothing
 * to say, as the protocol asks), records the agent's audio and collects every event, each checked
 * against the protocol's schema.
 *
 * Imports nothing from the server: only the protocol's one definition (src/protocol, a leaf with
 * no server code) and a WAV helper. It is what a user scripts calls with, and what the tests and
 * the benchmark use.
 */
import fs from 'node:fs/promises';
import { Value } from '@sinclair/typebox/value';
import WebSocket from 'ws';
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../protocol/media.constants.ts';
import { ServerMessage, type ClientMessage, type TranscriptEntry } from '../protocol/media.messages.ts';
import { webCallUrl } from '../protocol/web-call-url.ts';
// A leaf module with no server imports: the client stays usable on its own.
import { decodeWav, encodeWav, toMono } from '../lib/wav.ts';
import { wsDataToBuffer } from '../lib/ws-data.ts';
import { type ReceivedRtp, RtcSignallingError, RtcSocket, type RtcSocketOptions } from './webrtc-socket.ts';

export { PROTOCOL_VERSION, webCallUrl };
/** The protocol's audio rate, Hz: what `play` takes and `agentPcm` returns (PROTOCOL_SAMPLE_RATE). */
export const SAMPLE_RATE = PROTOCOL_SAMPLE_RATE;
const FRAME_SAMPLES = 320; // 20 ms

/** A server event as received, stamped with the client's clock (ms since the client was created). */
export type ClientEvent = ServerMessage & { atMs: number };

/** One utterance of the live transcript (the protocol's TranscriptEntry). */
export type TranscriptLine = TranscriptEntry;

export interface CallEnd {
  call_status: string;
  disconnection_reason: string;
  /** WebSocket close code. */
  close_code: number;
}

export class JoinError extends Error {
  readonly code: string;
  readonly closeCode: number | undefined;
  constructor(code: string, message: string, closeCode?: number) {
    super(`${code}: ${message}`);
    this.name = 'JoinError';
    this.code = code;
    this.closeCode = closeCode;
  }
}

export interface JoinOptions {
  /** The server's base URL (http://host:port) or the endpoint's ws(s):// URL (see webCallUrl). */
  url: string;
  accessToken: string;
  /** How long to wait for call_started, ms; default 10 000. */
  timeoutMs?: number;
  /** Send silence whenever no audio is queued (default true; the protocol asks clients to). */
  sendSilence?: boolean;
  /** Called with each server event as it arrives (after it is in `events`). */
  onEvent?: (event: ClientEvent) => void;
  /** How the call is carried: `websocket` (default) or `webrtc` (Opus over RTP, events on a data channel; `url` is then the server's http(s) base URL). */
  transport?: 'websocket' | 'webrtc';
  /** WebRTC only: the one local IPv4 address to gather ICE candidates on (tests: 127.0.0.1); default every interface. */
  iceAddress?: string;
  /** WebRTC only: rewrites the offer and the answer (tests that put a UDP relay in the path). */
  rewriteSdp?: RtcSocketOptions['rewriteSdp'];
  /** WebRTC only: `relay` reaches the server only through the TURN server the signalling hands out (a network that blocks UDP). */
  iceTransportPolicy?: RtcSocketOptions['iceTransportPolicy'];
  /** Over WebRTC: send with Opus DTX (RtcSocketOptions.dtx). */
  dtx?: boolean;
}

/**
 * Reads one text message of the server: an event stamped with `atMs`, or `stray` (the parsed
 * value, or the text when it is not JSON) when it is not a server message of this protocol version.
 */
function readEvent(text: string, atMs: number): { event: ClientEvent } | { stray: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { stray: text };
  }
  return Value.Check(ServerMessage, value) ? { event: { ...value, atMs } } : { stray: value };
}

interface Queued {
  pcm: Int16Array;
  offset: number;
  done: () => void;
}

export class WebCallClient {
  readonly callId: string;
  /** Every server event in order of arrival. */
  readonly events: ClientEvent[] = [];
  /**
   * Text messages that are not a server message of this protocol version (an unknown type, a
   * malformed message, or not JSON: kept as the text), in order of arrival; not in `events`.
   */
  readonly unknownMessages: unknown[] = [];
  /** Agent audio messages with their arrival time (ms on the client's clock). */
  readonly agentAudio: Array<{ atMs: number; pcm: Int16Array }> = [];
  /** Over WebRTC: the agent's RTP headers as they arrived (the last minute's; atMs on the client's clock); empty over the WebSocket. */
  get agentRtp(): ReceivedRtp[] {
    const ws = this.#ws as unknown;
    return ws instanceof RtcSocket ? ws.received.map((h) => ({ ...h, atMs: h.atMs - this.#t0 })) : [];
  }
  /** The live transcript as the last `update` event gave it. */
  transcript: TranscriptLine[] = [];
  /** Resolves when the call ends (call_ended, or the socket closing without it). */
  readonly ended: Promise<CallEnd>;
  /** User audio frames sent so far. */
  framesSent = 0;

  readonly #ws: WebSocket;
  readonly #t0: number;
  readonly #queue: Queued[] = [];
  readonly #sendSilence: boolean;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextDue = 0;
  #endInfo: { call_status?: string; disconnection_reason?: string } = {};
  #waiters: Array<{ test: (e: ClientEvent) => boolean; resolve: (e: ClientEvent) => void }> = [];
  #closed = false;

  readonly #onEvent: ((event: ClientEvent) => void) | undefined;

  private constructor(ws: WebSocket, t0: number, callId: string, sendSilence: boolean, first: { events: ClientEvent[]; unknown: unknown[] }, pending: Array<{ data: Buffer; binary: boolean }>, onEvent?: (event: ClientEvent) => void) {
    this.#ws = ws;
    this.#t0 = t0;
    this.callId = callId;
    this.#sendSilence = sendSilence;
    this.#onEvent = onEvent;
    this.events.push(...first.events);
    for (const event of first.events) onEvent?.(event);
    this.unknownMessages.push(...first.unknown);
    this.ended = new Promise<CallEnd>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) {
        this.#closed = true;
        resolve({ call_status: 'unknown', disconnection_reason: 'connection_closed', close_code: 1006 });
        return;
      }
      ws.on('close', (code) => {
        this.#closed = true;
        this.#stopSender();
        for (const q of this.#queue.splice(0)) q.done();
        resolve({
          call_status: this.#endInfo.call_status ?? 'unknown',
          disconnection_reason: this.#endInfo.disconnection_reason ?? 'connection_closed',
          close_code: code,
        });
      });
    });
    ws.removeAllListeners('message');
    ws.on('message', (data, binary) => this.#onMessage(data as Buffer, binary));
    // Messages that arrived right behind call_started, before this object existed.
    for (const m of pending) this.#onMessage(m.data, m.binary);
    this.#startSender();
  }

  /** Connects, joins and resolves once the server answers call_started; rejects with JoinError on a refusal. */
  static async join(options: JoinOptions): Promise<WebCallClient> {
    const t0 = performance.now();
    // The WebRTC wire is shaped like a WebSocket (src/client/webrtc-socket.ts): the rest is the same.
    const ws =
      options.transport === 'webrtc'
        ? (RtcSocket.connect({
            baseUrl: options.url,
            accessToken: options.accessToken,
            ...(options.iceAddress ? { iceAddress: options.iceAddress } : {}),
            ...(options.rewriteSdp ? { rewriteSdp: options.rewriteSdp } : {}),
            ...(options.iceTransportPolicy ? { iceTransportPolicy: options.iceTransportPolicy } : {}),
            ...(options.dtx ? { dtx: true } : {}),
          }) as unknown as WebSocket)
        : new WebSocket(webCallUrl(options.url), { perMessageDeflate: false });
    const first = { events: [] as ClientEvent[], unknown: [] as unknown[] };
    const pending: Array<{ data: Buffer; binary: boolean }> = [];
    let joined = false;
    const callId = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new JoinError('client_timeout', 'no call_started from the server in time'));
      }, options.timeoutMs ?? 10_000);
      let refusal: { code: string; message: string } | undefined;
      const fail = (e: JoinError) => {
        clearTimeout(timer);
        reject(e);
      };
      ws.on('error', (e) => fail(new JoinError(e instanceof RtcSignallingError ? e.code : 'connection_failed', e.message)));
      ws.on('close', (code) => fail(new JoinError(refusal?.code ?? 'connection_closed', refusal?.message ?? `closed with ${code}`, code)));
      ws.on('open', () => {
        ws.send(serialize({ type: 'join', access_token: options.accessToken, protocol_version: PROTOCOL_VERSION, sample_rate: PROTOCOL_SAMPLE_RATE }));
      });
      ws.on('message', (data, binary) => {
        if (joined) {
          pending.push({ data: data as Buffer, binary });
          return;
        }
        if (binary) return;
        const read = readEvent(wsDataToBuffer(data).toString('utf8'), performance.now() - t0);
        if (!('event' in read)) {
          first.unknown.push(read.stray);
          return;
        }
        const event = read.event;
        first.events.push(event);
        if (event.type === 'error') refusal = { code: event.code, message: event.message };
        if (event.type === 'call_started') {
          clearTimeout(timer);
          joined = true;
          ws.removeAllListeners('close');
          ws.removeAllListeners('error');
          ws.on('error', () => {});
          resolve(event.call_id);
        }
      });
    });
    return new WebCallClient(ws, t0, callId, options.sendSilence ?? true, first, pending, options.onEvent);
  }

  /** Milliseconds since the client was created. */
  now(): number {
    return performance.now() - this.#t0;
  }

  /** Queues user audio (16 kHz mono); resolves once it has all been sent, in real time. */
  play(pcm: Int16Array): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => this.#queue.push({ pcm, offset: 0, done: resolve }));
  }

  /** Streams a WAV file (16-bit PCM; other rates and channel counts are converted). */
  async playWav(file: string): Promise<void> {
    await this.play(readWav(await fs.readFile(file)));
  }

  /** Sends `hangup` and waits for the end. */
  async hangup(): Promise<CallEnd> {
    if (!this.#closed && this.#ws.readyState === WebSocket.OPEN) this.#ws.send(serialize({ type: 'hangup' }));
    return this.ended;
  }

  /** Sends a ping; resolves with the round trip, ms. */
  async ping(): Promise<number> {
    const id = Math.random().toString(36).slice(2);
    const start = this.now();
    const wait = this.waitFor((e) => e.type === 'pong' && e.id === id, 5_000);
    this.#ws.send(serialize({ type: 'ping', id }));
    await wait;
    return this.now() - start;
  }

  /** Sends a raw text message (tests: malformed messages). */
  sendText(text: string): void {
    this.#ws.send(text);
  }

  /** Vanishes without a close handshake (tests: a dropped network). */
  drop(): void {
    this.#stopSender();
    this.#ws.terminate();
  }

  /** Over WebRTC: restarts ICE on the call's session (a changed network; docs/media-protocol.md, "ICE restarts"). */
  restartIce(): Promise<void> {
    const ws: unknown = this.#ws;
    if (!(ws instanceof RtcSocket)) return Promise.reject(new Error('ICE restarts are for calls over WebRTC'));
    return ws.restartIce();
  }

  /** Stops sending audio but keeps the socket open (tests: a client that stalls). */
  stall(): void {
    this.#stopSender();
  }

  /** Closes cleanly (the server treats it as the user hanging up). */
  close(): void {
    this.#stopSender();
    this.#ws.close(1000);
  }

  /**
   * Resolves with the first event (already received or future) of the given type, or that passes
   * `test`; rejects after `timeoutMs` (default 30 000).
   */
  waitFor<T extends ClientEvent['type']>(type: T, timeoutMs?: number): Promise<Extract<ClientEvent, { type: T }>>;
  waitFor<E extends ClientEvent>(test: (e: ClientEvent) => e is E, timeoutMs?: number): Promise<E>;
  waitFor(test: (e: ClientEvent) => boolean, timeoutMs?: number): Promise<ClientEvent>;
  waitFor(test: string | ((e: ClientEvent) => boolean), timeoutMs = 30_000): Promise<ClientEvent> {
    const t = typeof test === 'string' ? (e: ClientEvent) => e.type === test : test;
    const seen = this.events.find(t);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push({ test: t, resolve: (e) => { clearTimeout(timer); resolve(e); } });
    });
  }

  /**
   * Resolves with the next event from now on of the given type, or that passes `test`; rejects
   * after `timeoutMs` (default 30 000).
   */
  next<T extends ClientEvent['type']>(type: T, timeoutMs?: number): Promise<Extract<ClientEvent, { type: T }>>;
  next<E extends ClientEvent>(test: (e: ClientEvent) => e is E, timeoutMs?: number): Promise<E>;
  next(test: (e: ClientEvent) => boolean, timeoutMs?: number): Promise<ClientEvent>;
  next(test: string | ((e: ClientEvent) => boolean), timeoutMs = 30_000): Promise<ClientEvent> {
    const t = typeof test === 'string' ? (e: ClientEvent) => e.type === test : test;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push({ test: t, resolve: (e) => { clearTimeout(timer); resolve(e); } });
    });
  }

  /** Everything the agent said, concatenated (16 kHz mono). */
  agentPcm(): Int16Array {
    const total = this.agentAudio.reduce((n, c) => n + c.pcm.length, 0);
    const out = new Int16Array(total);
    let o = 0;
    for (const c of this.agentAudio) {
      out.set(c.pcm, o);
      o += c.pcm.length;
    }
    return out;
  }

  /** Writes what the agent said as a 16 kHz mono WAV. */
  async saveAgentWav(file: string): Promise<void> {
    await fs.writeFile(file, writeWav(this.agentPcm(), PROTOCOL_SAMPLE_RATE));
  }

  #onMessage(data: Buffer, binary: boolean): void {
    const atMs = this.now();
    if (binary) {
      const copy = new Uint8Array(data.byteLength & ~1);
      copy.set(data.subarray(0, copy.byteLength));
      this.agentAudio.push({ atMs, pcm: new Int16Array(copy.buffer) });
      return;
    }
    const read = readEvent(data.toString('utf8'), atMs);
    if (!('event' in read)) {
      this.unknownMessages.push(read.stray);
      return;
    }
    const event = read.event;
    this.events.push(event);
    if (event.type === 'update') this.transcript = event.transcript;
    if (event.type === 'call_ended') this.#endInfo = { call_status: event.call_status, disconnection_reason: event.disconnection_reason };
    this.#onEvent?.(event);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.test(event)) return true;
      w.resolve(event);
      return false;
    });
  }

  // Real-time sender: one 20 ms frame per tick on an absolute schedule (no drift); after a stall
  // of the event loop it catches up at most 200 ms at once.
  #startSender(): void {
    this.#nextDue = performance.now();
    const tick = () => {
      if (this.#closed) return;
      const now = performance.now();
      let burst = 0;
      while (this.#nextDue <= now && burst < 10) {
        this.#sendFrame();
        this.#nextDue += 20;
        burst++;
      }
      if (this.#nextDue < now - 200) this.#nextDue = now;
      this.#timer = setTimeout(tick, Math.max(0, this.#nextDue - performance.now()));
    };
    tick();
  }

  #stopSender(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#closed ||= this.#ws.readyState !== WebSocket.OPEN;
  }

  #sendFrame(): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    const frame = new Int16Array(FRAME_SAMPLES);
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.#queue.length > 0) {
      const q = this.#queue[0]!;
      const n = Math.min(FRAME_SAMPLES - filled, q.pcm.length - q.offset);
      frame.set(q.pcm.subarray(q.offset, q.offset + n), filled);
      filled += n;
      q.offset += n;
      if (q.offset >= q.pcm.length) {
        this.#queue.shift();
        q.done();
      }
    }
    if (filled === 0 && !this.#sendSilence) return;
    this.#ws.send(Buffer.from(frame.buffer), { binary: true });
    this.framesSent++;
  }
}

/**
 * Reads a 16-bit PCM WAV (format 1 or extensible) as 16 kHz mono: channels are averaged, other
 * rates are resampled by linear interpolation (good enough for speech into a recogniser; give
 * 16 kHz audio for the best result). Other sample formats are refused.
 */
export function readWav(buf: Buffer): Int16Array {
  const audio = decodeWav(buf);
  const mono = toMono(audio);
  return audio.sampleRate === PROTOCOL_SAMPLE_RATE ? mono : resampleLinear(mono, audio.sampleRate, PROTOCOL_SAMPLE_RATE);
}

function resampleLinear(pcm: Int16Array, from: number, to: number): Int16Array {
  const n = Math.floor((pcm.length * to) / from);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const x = (i * from) / to;
    const a = Math.floor(x);
    const f = x - a;
    out[i] = Math.round((pcm[a] ?? 0) * (1 - f) + (pcm[a + 1] ?? pcm[a] ?? 0) * f);
  }
  return out;
}

/** A client message as sent: typed by the protocol's definition. */
function serialize(message: ClientMessage): string {
  return JSON.stringify(message);
}

/** A mono 16-bit WAV. */
export function writeWav(pcm: Int16Array, rate: number): Buffer {
  return encodeWav({ sampleRate: rate, channels: 1, samples: pcm });
}
