import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The exact bytes received. */
  raw: Buffer;
  json: any;
  at: number;
}

export type Responder = (request: Received) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/** A real HTTP receiver on 127.0.0.1, port 0, recording raw bodies and headers. */
export class Receiver {
  readonly received: Received[] = [];
  respond: Responder = () => ({ status: 200, body: 'ok' });
  readonly #server: http.Server;
  readonly #hanging = new Set<http.ServerResponse>();
  #waiters: Array<{ count: number; resolve: () => void }> = [];
  #dropWaiters: Array<() => void> = [];
  /** Requests left unanswered ('hang') whose connection the sender closed. */
  dropped = 0;
  port = 0;

  constructor() {
    this.#server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks);
        let json: unknown;
        try {
          json = JSON.parse(raw.toString('utf8'));
        } catch {
          json = undefined;
        }
        const entry: Received = { path: request.url ?? '/', headers: request.headers, raw, json, at: Date.now() };
        this.received.push(entry);
        this.#waiters = this.#waiters.filter((w) => {
          if (this.received.length >= w.count) w.resolve();
          return this.received.length < w.count;
        });
        const answer = this.respond(entry);
        if (answer === 'hang') {
          this.#hanging.add(response);
          response.once('close', () => {
            if (!this.#hanging.delete(response)) return; // closed by close(), not by the sender
            this.dropped += 1;
            for (const resolve of this.#dropWaiters.splice(0)) resolve();
          });
          return;
        }
        const send = () => response.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? '');
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    this.#server.keepAliveTimeout = 60_000;
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await receiver.listen();
    return receiver;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(port, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Resolves once `count` requests in all have arrived. */
  waitFor(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver got ${this.received.length} of ${count} requests`)), timeoutMs);
      this.#waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(); } });
    });
  }

  /** Resolves once the sender has closed the connection of an unanswered request (the next, or one already closed). */
  waitForDrop(timeoutMs = 10_000): Promise<void> {
    if (this.dropped > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no unanswered request was dropped by its sender')), timeoutMs);
      this.#dropWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    const hanging = [...this.#hanging];
    this.#hanging.clear();
    for (const response of hanging) response.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
