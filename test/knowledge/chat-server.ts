import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatBody {
  messages: Array<{ role: string; content: string | null }>;
}

/** A local OpenAI-compatible chat server (streamed SSE) that answers with a scripted text and keeps every request. */
export class ChatServer {
  readonly requests: ChatBody[] = [];
  answer: (body: ChatBody) => string = () => 'Hello.';
  readonly #server: Server;
  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatBody;
        this.requests.push(body);
        const text = this.answer(body);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }
  close(): Promise<void> {
    return new Promise((r) => {
      this.#server.close(() => r());
      this.#server.closeAllConnections();
    });
  }
}
