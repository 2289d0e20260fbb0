// Local servers speaking the wire protocols of the hosted speech providers (issue 25, item 6):
// ElevenLabs' stream-input WebSocket and Cartesia's TTS WebSocket, scriptable to fail. Shared by
// the providers' own tests and the fallback voices' (issue 26).
import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';

export interface Seen {
  path: string;
  query: URLSearchParams;
  key: string;
  messages: Array<Record<string, unknown>>;
  closedAtMs: number | undefined;
}

export interface Script {
  /** Samples sent back per chunk, and how many chunks; -1: until the client goes. */
  chunkSamples?: number;
  chunks?: number;
  firstDelayMs?: number;
  /** Wait before the audio of each flushed piece after the first, ms (a slow generation). */
  laterDelayMs?: number;
  intervalMs?: number;
  /** What the server does instead of speaking. */
  failWith?: 'message-then-1008' | 'close-1011';
}

/** A local server speaking ElevenLabs' stream-input protocol. */
export async function fakeElevenLabs(script: Script = {}) {
  // GET /v1/voices answers the doctor's probe: 200 for the key the tests use, 401 for any other.
  const http = createServer((req, res) => res.writeHead(req.url === '/v1/voices' && req.headers['xi-api-key'] === 'el-key' ? 200 : 401).end('{}'));
  const wss = new WebSocketServer({ noServer: true });
  const seen: Seen[] = [];
  const upgrades = { count: 0 };
  http.on('upgrade', (req, socket, head) => {
    upgrades.count++;
    if (req.headers['xi-api-key'] === 'refused') {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, req.url ?? '', String(req.headers['xi-api-key'])));
  });
  const serve = (ws: WebSocket, url: string, key: string): void => {
    const u = new URL(url, 'http://x');
    const s: Seen = { path: u.pathname, query: u.searchParams, key, messages: [], closedAtMs: undefined };
    seen.push(s);
    const timers: NodeJS.Timeout[] = [];
    ws.on('close', () => {
      s.closedAtMs = performance.now();
      timers.forEach(clearTimeout);
    });
    // Text is spoken when flushed (`flush: true`) or closed (`text: ""`), each such piece in turn,
    // its audio's alignment spelling out the piece's characters over the piece's audio.
    let pending = '';
    let queue = Promise.resolve();
    let carry = Buffer.alloc(0);
    let chunkIndex = 0;
    let failed = false;
    const wait = (ms: number) => new Promise<void>((r) => timers.push(setTimeout(r, ms)));
    let pieces = 0;
    const speak = async (text: string): Promise<void> => {
      const n = script.chunkSamples ?? 1600;
      const count = script.chunks ?? 3;
      await wait(pieces++ === 0 ? (script.firstDelayMs ?? 0) : (script.laterDelayMs ?? script.firstDelayMs ?? 0));
      const chars = [...text];
      const totalMs = count > 0 ? (count * n) / 16 : 1000;
      const alignment = { chars, charStartTimesMs: chars.map((_, k) => Math.round((k * totalMs) / chars.length)), charDurationsMs: chars.map(() => Math.round(totalMs / chars.length)) };
      for (let i = 0; count < 0 || i < count; i++) {
        if (ws.readyState !== ws.OPEN) return;
        const pcm = Buffer.alloc(n * 2);
        for (let k = 0; k < n; k++) pcm.writeInt16LE(((chunkIndex * n + k) % 2000) - 1000, k * 2);
        chunkIndex++;
        // Base64 chunks need not end on a sample: each is cut one byte early, that byte sent next.
        const bytes = Buffer.concat([carry, pcm]);
        carry = bytes.subarray(bytes.length - 1);
        const audio = bytes.subarray(0, bytes.length - 1).toString('base64');
        ws.send(JSON.stringify({ audio, isFinal: false, alignment: i === 0 ? alignment : null }));
        await wait(script.intervalMs ?? 0);
      }
    };
    const fail = (): void => {
      failed = true;
      if (script.failWith === 'message-then-1008') {
        ws.send(JSON.stringify({ message: 'This request exceeds your quota.', error: 'quota_exceeded', code: 1008 }));
        ws.close(1008, 'quota_exceeded');
      } else ws.close(1011, 'internal error');
    };
    ws.on('message', (data) => {
      const m = JSON.parse((data as Buffer).toString('utf8')) as Record<string, unknown>;
      s.messages.push(m);
      if (failed) return;
      if (typeof m.text === 'string' && !m.voice_settings) pending += m.text;
      if (m.flush !== true && m.text !== '') return;
      if (script.failWith) {
        fail();
        return;
      }
      // The alignment spells out the text as sent, its spaces included.
      const text = pending;
      pending = '';
      if (text.trim()) queue = queue.then(() => speak(text));
      if (m.text === '') {
        queue = queue.then(() => {
          if (ws.readyState !== ws.OPEN) return;
          if (carry.length) ws.send(JSON.stringify({ audio: carry.toString('base64'), isFinal: false }));
          ws.send(JSON.stringify({ audio: null, isFinal: true }));
        });
      }
    });
  };
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    baseUrl: `ws://127.0.0.1:${port}`,
    seen,
    /** Socket openings asked for, refused ones included. */
    upgrades,
    close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); http.close(() => r()); http.closeAllConnections(); }),
  };
}

export interface Request {
  context_id: string;
  transcript?: string;
  cancel?: boolean;
  [key: string]: unknown;
}

/** A local server speaking Cartesia's TTS WebSocket protocol. */
export async function fakeCartesia(script: { chunks?: number; intervalMs?: number; firstDelayMs?: number; errorFor?: string; closeWith?: number } = {}) {
  const http = createServer((req, res) => res.writeHead(req.url?.startsWith('/voices') && req.headers['x-api-key'] === 'ca-key' && req.headers['cartesia-version'] ? 200 : 401).end('{}'));
  const wss = new WebSocketServer({ noServer: true });
  const seen = { connections: 0, headers: [] as Array<Record<string, unknown>>, requests: [] as Request[], cancelled: [] as string[] };
  http.on('upgrade', (req, socket, head) => {
    if (req.headers['x-api-key'] === 'refused') {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, req.headers));
  });
  const serve = (ws: WebSocket, headers: Record<string, unknown>): void => {
    seen.connections++;
    seen.headers.push(headers);
    const timers = new Map<string, NodeJS.Timeout>();
    const contexts = new Map<string, { queue: Promise<void>; atS: number }>();
    ws.on('close', () => timers.forEach(clearTimeout));
    ws.on('message', (data) => {
      const m = JSON.parse((data as Buffer).toString('utf8')) as Request;
      seen.requests.push(m);
      if (m.cancel) {
        seen.cancelled.push(m.context_id);
        clearTimeout(timers.get(m.context_id));
        return;
      }
      if (script.closeWith) {
        ws.close(script.closeWith, 'going away');
        return;
      }
      if (m.transcript === script.errorFor) {
        ws.send(JSON.stringify({ type: 'error', done: true, status_code: 400, error: 'Invalid voice: voice not found', context_id: m.context_id }));
        return;
      }
      // A context's requests are spoken in turn (`continue: true` adds to it); it is done after
      // the one with `continue: false`. The audio says which request it is: every sample is the
      // transcript's length; each piece's words come with their times in the context's audio.
      const ctx = contexts.get(m.context_id) ?? { queue: Promise.resolve(), atS: 0 };
      contexts.set(m.context_id, ctx);
      const transcript = m.transcript ?? '';
      ctx.queue = ctx.queue.then(async () => {
        if (!transcript.trim() && m.continue) return;
        const count = script.chunks ?? 3;
        if (transcript.trim()) await new Promise((r) => timers.set(m.context_id, setTimeout(r, script.firstDelayMs ?? 0)));
        const words = transcript.trim() ? transcript.trim().split(/\s+/) : [];
        const pieceS = (Math.max(count, 1) * 800) / 16_000;
        const starts = words.map((_, k) => ctx.atS + (k * pieceS) / words.length);
        const ends = words.map((_, k) => ctx.atS + ((k + 1) * pieceS) / words.length);
        for (let i = 0; (script.chunks === -1 || i < count) && transcript.trim(); i++) {
          if (ws.readyState !== ws.OPEN || seen.cancelled.includes(m.context_id)) return;
          const pcm = Buffer.alloc(800 * 2);
          for (let k = 0; k < 800; k++) pcm.writeInt16LE(transcript.length, k * 2);
          ws.send(JSON.stringify({ type: 'chunk', data: pcm.toString('base64'), done: false, status_code: 206, step_time: 12, context_id: m.context_id }));
          if (i === 0) ws.send(JSON.stringify({ type: 'timestamps', done: false, context_id: m.context_id, word_timestamps: { words, start: starts, end: ends } }));
          await new Promise((r) => timers.set(m.context_id, setTimeout(r, script.intervalMs ?? 0)));
        }
        if (transcript.trim()) ctx.atS += pieceS;
        if (!m.continue && ws.readyState === ws.OPEN && !seen.cancelled.includes(m.context_id)) ws.send(JSON.stringify({ type: 'done', done: true, status_code: 206, context_id: m.context_id }));
      });
    });
  };
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/tts/websocket`,
    seen,
    dropAll: () => { for (const c of wss.clients) c.terminate(); },
    close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); http.close(() => r()); http.closeAllConnections(); }),
  };
}
