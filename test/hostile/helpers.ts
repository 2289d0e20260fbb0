// Hostile peers for the hostile-peer suite: servers written here that speak a tenant's protocols
// (the custom-LLM WebSocket, a function backend) and misbehave on purpose.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** JSON text of `depth` arrays nested in one another: `[[[...]]]`, 2 bytes a level. */
export function deepArray(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** Resident memory of a process, bytes (Linux). */
export function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/**
 * A custom-LLM server whose behaviour is chosen by the agent's URL: the service dials
 * `{llm_websocket_url}/{call_id}`, and the path before the call id names the behaviour.
 */
export class HostileLlmServer {
  readonly behaviours = new Map<string, (ws: WebSocket) => void>();
  /** Connections per behaviour (dials). */
  readonly dials = new Map<string, number>();
  readonly #wss: WebSocketServer;

  constructor() {
    this.#wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 1 << 20 });
    this.#wss.on('connection', (ws, req) => {
      ws.on('error', () => {});
      const parts = (req.url ?? '').split('/').filter(Boolean);
      const name = parts.slice(0, -1).join('/');
      this.dials.set(name, (this.dials.get(name) ?? 0) + 1);
      this.behaviours.get(name)?.(ws);
    });
  }

  /** The agent's llm_websocket_url for `behaviour`. */
  url(behaviour: string): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}/${behaviour}`;
  }

  close(): Promise<void> {
    for (const ws of this.#wss.clients) ws.terminate();
    return new Promise((resolve) => this.#wss.close(() => resolve()));
  }
}

/** Sends one JSON text frame as it is written (the test writes hostile text by hand). */
export function sendRaw(ws: WebSocket, text: string): void {
  if (ws.readyState === ws.OPEN) ws.send(text);
}
