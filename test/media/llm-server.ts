// A custom-LLM server for the tests, written from Retell's LLM WebSocket protocol (docs/custom-llm.md):
// it keeps every frame it receives, by call id, and answers as each test tells it.
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { wsDataToBuffer } from '../../src/lib/ws-data.ts';

export type Event = Record<string, any>;

/** A custom-LLM server: each connection is handed to `behave` with its call id; every frame received is kept. */
export class LlmServer {
  readonly received: Array<{ callId: string; event: Event }> = [];
  readonly connections: string[] = [];
  behave: (ws: WebSocket, callId: string) => void = () => {};
  onEvent: (ws: WebSocket, event: Event) => void = () => {};
  readonly #wss: WebSocketServer;
  /** Settles once the server listens (a fixed port is bound asynchronously). */
  readonly listening: Promise<void>;
  constructor(port = 0) {
    this.#wss = new WebSocketServer({ host: '127.0.0.1', port });
    this.listening = new Promise((resolve, reject) => {
      this.#wss.once('listening', () => resolve());
      this.#wss.once('error', reject);
    });
    this.#wss.on('connection', (ws, req) => {
      const callId = (req.url ?? '').split('/').pop() ?? '';
      this.connections.push(req.url ?? '');
      ws.on('message', (data) => {
        const event = JSON.parse(wsDataToBuffer(data).toString('utf8')) as Event;
        this.received.push({ callId, event });
        this.onEvent(ws, event);
      });
      this.behave(ws, callId);
    });
  }
  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}/llm-websocket`;
  }
  of(callId: string, type?: string): Event[] {
    return this.received.filter((r) => r.callId === callId && (type === undefined || r.event.interaction_type === type)).map((r) => r.event);
  }
  close(): Promise<void> {
    for (const ws of this.#wss.clients) ws.terminate();
    return new Promise((r) => this.#wss.close(() => r()));
  }
}

export const send = (ws: WebSocket, event: Event) => ws.send(JSON.stringify(event));


/** A transcript as sent, without each utterance's `words` (Retell's word timings), for comparing contents. */
export const withoutWords = (entries: Event[] | undefined): Event[] | undefined => entries?.map(({ words: _words, ...rest }) => rest);
