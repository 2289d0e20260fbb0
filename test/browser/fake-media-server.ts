/**
 * A small, protocol-faithful stand-in for the media endpoint (docs/media-protocol.md, v1), for
 * testing the browser SDK before and apart from the real voice runtime. It serves the built SDK
 * and a test page, and on `/v2/web-call`:
 * - refuses bad tokens (`token_invalid`/`token_used`, close 4401), answers `join` with `call_started`;
 * - streams a 440 Hz tone as the agent's greeting between `agent_start_talking`/`agent_stop_talking`,
 *   paced at real time with at most 100 ms ahead, as the protocol says;
 * - measures the microphone audio it receives and, once it has heard some, sends a user `update`;
 * - answers `ping` with `pong`, and `hangup` with `call_ended` (`user_hangup`) then close 1000;
 * - lets a test barge in (`clear`) or drop the connection.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { wsDataToBuffer } from '../../src/lib/ws-data.ts';
import type { ServerMessage } from '../../src/protocol/media.messages.ts';

const RATE = 16_000;
const FRAME = 320; // 20 ms

export interface FakeCall {
  callId: string;
  socket: WebSocket;
  /** 16 kHz samples of microphone audio received, and how many were above the speech level. */
  receivedSamples: number;
  loudSamples: number;
  /** Text messages received from the client. */
  messages: Record<string, unknown>[];
  /** Agent samples sent. */
  sentSamples: number;
  ended: boolean;
}

export interface FakeMediaServer {
  baseUrl: string;
  /** A token the next join may use (single use). */
  issueToken(): string;
  calls: FakeCall[];
  /** Starts a long agent utterance on `call`; after `afterMs`, barges in (`clear`). */
  bargeIn(call: FakeCall, afterMs: number): Promise<void>;
  /** Drops the connection without a close handshake. */
  drop(call: FakeCall): void;
  close(): Promise<void>;
}

const TEST_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>SDK test</title></head>
<body><button id="start">start</button><button id="stop">stop</button>
<script type="module">
import { WebCallClient } from '/sdk/web-sdk.js';
window.events = [];
window.audioChunks = 0;
const client = new WebCallClient({ keepAliveIntervalMs: 500, connectionTimeoutMs: 3000 });
window.client = client;
for (const name of ['call_started', 'call_ready', 'call_ended', 'agent_start_talking', 'agent_stop_talking', 'update', 'node_transition', 'error']) {
  client.on(name, (payload) => window.events.push({ name, payload: name === 'error' ? { code: payload.code, message: payload.message } : payload ?? null }));
}
client.on('audio', () => { window.audioChunks += 1; });
document.getElementById('start').onclick = () => {
  window.startResult = client.startCall({ accessToken: window.nextToken, emitRawAudioSamples: true, transport: 'websocket' }).then(() => 'started', (e) => e.code);
};
document.getElementById('stop').onclick = () => { window.stopResult = client.stopCall().then(() => 'stopped'); };
window.ready = true;
</script></body></html>`;

export async function startFakeMediaServer(distDir: string): Promise<FakeMediaServer> {
  const tokens = new Set<string>();
  const usedTokens = new Set<string>();
  const calls: FakeCall[] = [];
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let counter = 0;

  const server = http.createServer((req, res) => {
    if (req.url === '/sdk-test.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(TEST_PAGE);
      return;
    }
    const match = /^\/sdk\/([\w.-]+\.js(?:\.map)?)$/.exec(req.url ?? '');
    if (match) {
      const file = path.join(distDir, match[1]!);
      if (fs.existsSync(file)) {
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(fs.readFileSync(file));
        return;
      }
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, path: '/v2/web-call' });

  /** Streams `ms` of a 440 Hz tone in 20 ms frames, at real time with 100 ms ahead; stops when `stop()` returns true. */
  const streamTone = (call: FakeCall, ms: number, stop: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const frames = Math.round(ms / 20);
      const started = Date.now();
      let sent = 0;
      const tick = () => {
        if (stop() || call.ended || call.socket.readyState !== call.socket.OPEN) return resolve();
        const due = Math.min(frames, Math.floor((Date.now() - started + 100) / 20));
        for (; sent < due; sent++) {
          const frame = Buffer.alloc(FRAME * 2);
          for (let i = 0; i < FRAME; i++) {
            const n = sent * FRAME + i;
            frame.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * n) / RATE)), i * 2);
          }
          call.socket.send(frame);
          call.sentSamples += FRAME;
        }
        if (sent >= frames) return resolve();
        const timer = setTimeout(() => {
          timers.delete(timer);
          tick();
        }, 10);
        timers.add(timer);
      };
      tick();
    });

  // Typed by the protocol's one definition, so the stand-in cannot drift from the real server.
  const reply = (socket: WebSocket, message: ServerMessage) => socket.send(JSON.stringify(message));
  const send = (call: FakeCall, message: ServerMessage) => {
    if (call.socket.readyState === call.socket.OPEN) reply(call.socket, message);
  };

  wss.on('connection', (socket) => {
    let call: FakeCall | null = null;
    const joinTimer = setTimeout(() => {
      reply(socket, { type: 'error', code: 'join_timeout', message: 'No join message within 5 s.' });
      socket.close(4408);
    }, 5000);
    socket.on('message', (data, isBinary) => {
      if (isBinary) {
        if (!call) return;
        const bytes = data as Buffer;
        for (let i = 0; i + 1 < bytes.length; i += 2) {
          call.receivedSamples += 1;
          if (Math.abs(bytes.readInt16LE(i)) > 1000) call.loudSamples += 1;
        }
        if (call.loudSamples > 1600 && !call.messages.some((m) => m.type === '_heard')) {
          call.messages.push({ type: '_heard' });
          send(call, { type: 'update', transcript: [{ role: 'agent', content: 'Hello from the fake agent.' }, { role: 'user', content: 'I heard you.' }], final: true });
        }
        return;
      }
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(wsDataToBuffer(data).toString('utf8'));
      } catch {
        reply(socket, { type: 'error', code: 'bad_message', message: 'Not JSON.' });
        return;
      }
      if (!call) {
        clearTimeout(joinTimer);
        const token = message.access_token;
        if (message.type !== 'join' || typeof token !== 'string') {
          reply(socket, { type: 'error', code: 'bad_message', message: 'The first message must be join.' });
          socket.close(4400);
          return;
        }
        if (message.protocol_version !== 1 || message.sample_rate !== RATE) {
          reply(socket, { type: 'error', code: 'unsupported_protocol', message: 'Version 1 at 16000 Hz only.' });
          socket.close(4400);
          return;
        }
        if (!tokens.has(token)) {
          const code = usedTokens.has(token) ? 'token_used' : 'token_invalid';
          reply(socket, { type: 'error', code, message: `Refused: ${code}.` });
          socket.close(4401);
          return;
        }
        tokens.delete(token);
        usedTokens.add(token);
        call = { callId: `call_fake${++counter}`, socket, receivedSamples: 0, loudSamples: 0, messages: [message], sentSamples: 0, ended: false };
        calls.push(call);
        const current = call;
        send(current, { type: 'call_started', protocol_version: 1, call_id: current.callId, sample_rate: RATE, agent: { agent_id: 'agent_fake', agent_version: 1, agent_name: 'Fake' } });
        send(current, { type: 'agent_start_talking', utterance_id: 'u1' });
        send(current, { type: 'update', transcript: [{ role: 'agent', content: 'Hello from the fake agent.' }], final: false });
        void streamTone(current, 1000, () => false).then(() => {
          send(current, { type: 'agent_stop_talking', utterance_id: 'u1', cut_off: false });
          send(current, { type: 'update', transcript: [{ role: 'agent', content: 'Hello from the fake agent.' }], final: true });
        });
        return;
      }
      call.messages.push(message);
      if (message.type === 'ping') send(call, { type: 'pong', id: message.id });
      else if (message.type === 'hangup') {
        send(call, { type: 'call_ended', call_status: 'ended', disconnection_reason: 'user_hangup' });
        call.ended = true;
        socket.close(1000);
      }
    });
    socket.on('close', () => {
      clearTimeout(joinTimer);
      if (call) call.ended = true;
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    calls,
    issueToken() {
      const token = `tok_${++counter}_${Math.random().toString(36).slice(2)}`;
      tokens.add(token);
      return token;
    },
    async bargeIn(call, afterMs) {
      let cleared = false;
      send(call, { type: 'agent_start_talking', utterance_id: 'u2' });
      const streaming = streamTone(call, 5000, () => cleared);
      await new Promise((resolve) => setTimeout(resolve, afterMs));
      cleared = true;
      send(call, { type: 'clear', utterance_id: 'u2' });
      send(call, { type: 'agent_stop_talking', utterance_id: 'u2', cut_off: true });
      await streaming;
    },
    drop(call) {
      call.socket.terminate();
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
