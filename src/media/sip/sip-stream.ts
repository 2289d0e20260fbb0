/**
 * SIP over TCP (RFC 3261 18.3) for the SIP endpoint: the listening socket on SIP_PORT beside the
 * UDP one, the connections we open to a `;transport=tcp` trunk, and the framing of a byte stream
 * into messages by Content-Length (which a stream message must carry). Each message is handed to
 * the same handler as a UDP datagram, with the connection it came on: responses go back on it
 * (18.2.2). Bounded: connections per source address and in all, the size of one message
 * (MAX_SIP_MESSAGE_BYTES, refused with 413 and the connection closed), the time one message may
 * take to arrive once begun (slow senders are closed), bytes queued to a peer that does not read,
 * and idle connections (closed unless a call's dialog holds them).
 */
import net from 'node:net';
import type { SipTcpLimits } from '../../config/sip.config.ts';
import { MAX_SIP_BODY_BYTES, MAX_SIP_MESSAGE_BYTES, malformedAnswer } from './sip-message.ts';

/** Connections at once, all addresses together; more are refused by the listening socket. */
const MAX_CONNECTIONS = 2_000;
/** Bytes we may queue to a peer that does not read them; past this the connection is closed. */
const MAX_QUEUED_BYTES = 256 * 1024;
/** How long we wait for a trunk to accept our connection, ms. */
const CONNECT_TIMEOUT_MS = 5_000;
/** RFC 5626 4.4.1: a double CRLF is a keep-alive ping, answered with one CRLF. */
const PING = '\r\n\r\n';

/** Why a stream was closed by us, for the endpoint's drop counter. */
export type StreamDrop = 'too_many_connections' | 'too_large' | 'malformed' | 'read_timeout' | 'not_reading';

/** One TCP connection carrying SIP messages both ways. */
export class SipStream {
  readonly address: string;
  readonly port: number;
  readonly #socket: net.Socket;
  readonly #limits: SipTcpLimits;
  readonly #onMessage: (data: Buffer, stream: SipStream) => void;
  readonly #drop: (reason: StreamDrop) => void;
  #buffer: Buffer = Buffer.alloc(0);
  #readTimer: NodeJS.Timeout | null = null;
  #idleTimer: NodeJS.Timeout | null = null;
  /** Dialogs sending on this connection: it is not closed for idleness while any is. */
  #holds = 0;
  #closed = false;

  constructor(socket: net.Socket, options: { limits: SipTcpLimits; onMessage: (data: Buffer, stream: SipStream) => void; drop: (reason: StreamDrop) => void; onClose: () => void }) {
    this.#socket = socket;
    this.address = socket.remoteAddress ?? '';
    this.port = socket.remotePort ?? 0;
    this.#limits = options.limits;
    this.#onMessage = options.onMessage;
    this.#drop = options.drop;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.#read(chunk));
    socket.on('error', () => this.close());
    socket.on('close', () => {
      this.#closed = true;
      this.#clearTimers();
      options.onClose();
    });
    this.#armIdle();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sends one message; false when the connection is gone (the message is lost: the caller's timers decide). */
  write(message: Buffer): boolean {
    if (this.#closed) return false;
    if (this.#socket.writableLength > MAX_QUEUED_BYTES) {
      this.#drop('not_reading');
      this.close();
      return false;
    }
    this.#socket.write(message);
    return true;
  }

  /** A dialog sends on this connection: keep it open while the call lasts. */
  hold(): void {
    this.#holds += 1;
  }

  release(): void {
    this.#holds = Math.max(0, this.#holds - 1);
    if (this.#holds === 0) this.#armIdle();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearTimers();
    this.#socket.destroy();
  }

  #read(chunk: Buffer): void {
    if (this.#closed) return;
    this.#armIdle();
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      // Keep-alives between messages: a ping is answered, a lone CRLF skipped (RFC 5626 4.4.1).
      let start = 0;
      while (this.#buffer.length - start >= 2 && this.#buffer[start] === 0x0d && this.#buffer[start + 1] === 0x0a) {
        if (this.#buffer.toString('latin1', start, start + 4) === PING) {
          this.write(Buffer.from('\r\n'));
          start += 4;
        } else start += 2;
      }
      if (start > 0) this.#buffer = this.#buffer.subarray(start);
      if (this.#buffer.length === 0) return this.#stopReadTimer();
      // A message has begun: it must be whole within the read bound (a slow sender holds nothing for long).
      this.#readTimer ??= setTimeout(() => {
        this.#drop('read_timeout');
        this.close();
      }, this.#limits.readTimeoutMs);
      const end = this.#buffer.indexOf('\r\n\r\n', 0, 'latin1');
      if (end < 0) {
        if (this.#buffer.length > MAX_SIP_MESSAGE_BYTES) return this.#refuse(413, 'too_large');
        return;
      }
      const head = this.#buffer.toString('latin1', 0, end);
      // 18.3: a message on a stream carries Content-Length; without it, where it ends is unknown.
      const declared = /^(?:content-length|l)[ \t]*:[ \t]*([0-9]{1,7})[ \t]*$/im.exec(head);
      if (!declared) return this.#refuse(400, 'malformed');
      const length = Number(declared[1]);
      const total = end + 4 + length;
      if (length > MAX_SIP_BODY_BYTES || total > MAX_SIP_MESSAGE_BYTES) return this.#refuse(413, 'too_large');
      if (this.#buffer.length < total) return;
      const message = this.#buffer.subarray(0, total);
      this.#buffer = this.#buffer.subarray(total);
      this.#stopReadTimer();
      this.#onMessage(message, this);
      if (this.#closed) return;
    }
  }

  /** A message we cannot frame: answered (when it has a Via) and the connection closed, since the stream is out of step. */
  #refuse(status: number, reason: StreamDrop): void {
    this.#drop(reason);
    const answer = malformedAnswer(this.#buffer, status);
    if (answer) this.#socket.write(answer);
    this.#closed = true;
    this.#clearTimers();
    this.#socket.end();
    this.#socket.destroySoon();
  }

  #stopReadTimer(): void {
    if (this.#readTimer) clearTimeout(this.#readTimer);
    this.#readTimer = null;
  }

  #armIdle(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
    if (this.#closed || this.#holds > 0) return;
    this.#idleTimer = setTimeout(() => {
      if (this.#holds === 0) this.close();
    }, this.#limits.idleTimeoutMs);
    this.#idleTimer.unref();
  }

  #clearTimers(): void {
    this.#stopReadTimer();
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }
}

/** The listening TCP socket and every SIP connection, accepted or opened by us. */
export class SipStreams {
  readonly #server: net.Server;
  readonly #limits: SipTcpLimits;
  readonly #onMessage: (data: Buffer, stream: SipStream) => void;
  readonly #drop: (reason: StreamDrop) => void;
  readonly #streams = new Set<SipStream>();
  /** Open connections by source address (accepted ones only: those are the ones a flood makes). */
  readonly #perAddress = new Map<string, number>();

  constructor(options: { limits: SipTcpLimits; onMessage: (data: Buffer, stream: SipStream) => void; drop: (reason: StreamDrop) => void }) {
    this.#limits = options.limits;
    this.#onMessage = options.onMessage;
    this.#drop = options.drop;
    this.#server = net.createServer((socket) => this.#accept(socket));
    this.#server.maxConnections = MAX_CONNECTIONS;
  }

  /** Open connections, both ways. */
  get size(): number {
    return this.#streams.size;
  }

  /** Listens on `port` (0: a free one); rejects when it is taken. */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve((this.#server.address() as net.AddressInfo).port);
      });
    });
  }

  /** A connection of ours to a trunk; rejects when it is not accepted within CONNECT_TIMEOUT_MS. */
  connect(address: string, port: number): Promise<SipStream> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: address, port, timeout: CONNECT_TIMEOUT_MS });
      const fail = (error: Error) => {
        socket.destroy();
        reject(error);
      };
      socket.once('timeout', () => fail(new Error('the trunk did not accept the TCP connection in time')));
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.off('error', fail);
        socket.setTimeout(0);
        resolve(this.#track(socket, () => {}));
      });
    });
  }

  async close(): Promise<void> {
    for (const stream of this.#streams) stream.close();
    this.#streams.clear();
    if (!this.#server.listening) return;
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: net.Socket): void {
    const address = socket.remoteAddress ?? '';
    const open = this.#perAddress.get(address) ?? 0;
    if (open >= this.#limits.connectionsPerAddress) {
      this.#drop('too_many_connections');
      socket.destroy();
      return;
    }
    this.#perAddress.set(address, open + 1);
    this.#track(socket, () => {
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.#perAddress.delete(address);
      else this.#perAddress.set(address, left);
    });
  }

  #track(socket: net.Socket, onClose: () => void): SipStream {
    const stream: SipStream = new SipStream(socket, {
      limits: this.#limits,
      onMessage: this.#onMessage,
      drop: this.#drop,
      onClose: () => {
        this.#streams.delete(stream);
        onClose();
      },
    });
    this.#streams.add(stream);
    return stream;
  }
}
