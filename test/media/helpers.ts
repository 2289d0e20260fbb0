// A real listening server over a fresh store, with injectable speech engines, for media tests.
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import type { SessionTimings } from '../../src/media/call-session.ts';
import type { Providers } from '../../src/providers/registry.ts';
import { EnergyVad, FakeStt, FakeTts, type FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import type { LlmProvider } from '../../src/providers/llm.ts';
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { WebCallEndpoint } from '../../src/media/web-call/web-call.endpoint.ts';
import type { ServerMessage } from '../../src/protocol/media.messages.ts';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../../src/protocol/media.constants.ts';
import { webCallUrl } from '../../src/protocol/web-call-url.ts';
import { wsDataToBuffer } from '../../src/lib/ws-data.ts';
import { type StoreName, type TestStore, openTestStore } from '../helpers/stores.ts';
import { pino } from 'pino';
import { createSilentLogger, type Logger } from '../../src/lib/logger.ts';

export interface MediaServer {
  baseUrl: string;
  runtime: Runtime;
  app: FastifyInstance;
  testStore: TestStore;
  apiKey: string;
  accountId: string;
  /** JSON request with the account's key. */
  api(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; json: any; headers: Headers; bytes: Buffer }>;
  /** A conversation flow and an agent on it. */
  flowAgent(flow: unknown, agent?: Record<string, unknown>): Promise<string>;
  /** create-web-call + join; `close()` fails if the server sent such a client a message outside the protocol. */
  call(agentId: string, body?: Record<string, unknown>): Promise<WebCallClient>;
  /** Kinds of webhook events recorded in the outbox for the account, in order. */
  eventKinds(): Promise<string[]>;
  close(): Promise<void>;
}

export interface MediaServerOptions {
  providers?: Providers;
  timings?: Partial<SessionTimings>;
  env?: Record<string, string>;
  /** The server's logger; default silent (tests that check what is logged pass one: see `capturingLogger`). */
  logger?: Logger;
}

export async function startMediaServer(storeName: StoreName, options: MediaServerOptions = {}): Promise<MediaServer> {
  const testStore = await openTestStore(storeName);
  const config = loadConfig({ DATA_DIR: testStore.dataDir, PORT: '0', WEBHOOK_WORKER: 'false', ...options.env });
  const runtime = await createRuntime(config, {
    logger: options.logger ?? createSilentLogger(),
    store: testStore.store,
    ...(options.providers ? { providers: options.providers } : {}),
    ...(options.timings ? { sessionTimings: options.timings } : {}),
  });
  const app = await buildApp(runtime);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const created = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 100_000 });
  const apiKey = created.api_key;
  const api: MediaServer['api'] = async (method, path, body, key = apiKey) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      json = undefined;
    }
    return { status: res.status, json, headers: res.headers, bytes };
  };
  const clients: WebCallClient[] = [];
  return {
    baseUrl,
    runtime,
    app,
    testStore,
    apiKey,
    accountId: created.account_id,
    api,
    async flowAgent(flow, agent = {}) {
      const f = await api('POST', '/create-conversation-flow', flow);
      if (f.status !== 201) throw new Error(`flow: ${f.status} ${JSON.stringify(f.json)}`);
      const a = await api('POST', '/create-agent', {
        agent_name: 'Media test',
        response_engine: { type: 'conversation_flow', conversation_flow_id: f.json.conversation_flow_id },
        ...agent,
      });
      if (a.status !== 201) throw new Error(`agent: ${a.status} ${JSON.stringify(a.json)}`);
      return a.json.agent_id as string;
    },
    async call(agentId, body = {}) {
      const c = await api('POST', '/v2/create-web-call', { agent_id: agentId, ...body });
      if (c.status !== 201) throw new Error(`create-web-call: ${c.status} ${JSON.stringify(c.json)}`);
      const client = await WebCallClient.join({ url: baseUrl, accessToken: c.json.access_token });
      clients.push(client);
      return client;
    },
    async eventKinds() {
      const rows = await runtime.store.db
        .selectFrom('webhook_events')
        .select(['kind', 'created_at', 'id'])
        .where('account_id', '=', created.account_id)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => r.kind);
    },
    async close() {
      await app.close();
      await runtime.close();
      await testStore.close();
      // Every message the server sent these clients is one of the protocol's (src/protocol).
      const strays = clients.flatMap((client) => client.unknownMessages);
      if (strays.length > 0) throw new Error(`the server sent messages outside the media protocol: ${JSON.stringify(strays).slice(0, 500)}`);
    },
  };
}

/** Instant scripted engines: recognised texts in order, a tone per character, an energy VAD. */
export function fakeProviders(script: string[], options: { llm?: FakeLlm | LlmProvider; msPerChar?: number } = {}) {
  const stt = new FakeStt(script);
  const tts = new FakeTts({ msPerChar: options.msPerChar ?? 15 });
  const providers: Providers & { stt: FakeStt; tts: FakeTts } = {
    llm: options.llm,
    stt,
    tts,
    vad: new EnergyVad(),
    async close() {},
  };
  return providers;
}

// Audio builders are shared with the voice tests.
export { concat, silence, tone } from '../voice/harness.ts';

/** Polls `check` until it returns a value (not undefined/false) or the time runs out. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000, stepMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** A raw `ws` client joined to a call: sends what the test says, no pacing; for misbehaving clients. */
export interface RawClient {
  ws: WebSocket;
  /** JSON events received, from call_started on. */
  events: Array<{ type: string; [field: string]: unknown }>;
  /** Resolves with the close code. */
  closed: Promise<number>;
}

/** Connects, sends the join and resolves once call_started arrived. */
export async function rawJoin(baseUrl: string, accessToken: string): Promise<RawClient> {
  const ws = new WebSocket(webCallUrl(baseUrl), { perMessageDeflate: false });
  const events: RawClient['events'] = [];
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  ws.on('error', () => {});
  ws.on('message', (data, binary) => {
    if (!binary) events.push(JSON.parse(wsDataToBuffer(data).toString('utf8')) as RawClient['events'][number]);
  });
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => ws.send(JSON.stringify({ type: 'join', access_token: accessToken, protocol_version: PROTOCOL_VERSION, sample_rate: PROTOCOL_SAMPLE_RATE })));
    const onMessage = () => {
      if (events.some((e) => e.type === 'call_started')) {
        ws.off('message', onMessage);
        resolve();
      }
    };
    ws.on('message', onMessage);
    void closed.then((code) => reject(new Error(`join refused (${code}): ${JSON.stringify(events)}`)));
  });
  return { ws, events, closed };
}

/** A metric's value on the server's /metrics: the sum over its series whose labels include `labels`; 0 when absent. */
export async function metricValue(baseUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    const series = m[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += Number(m[2]);
  }
  return sum;
}

/** A logger that keeps every line it writes (parsed), for tests of what the server logs. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

/**
 * The web call's endpoint over a socket that only records: what the session tells a web client,
 * as protocol messages (`events`), and the close codes (`closed`). For session tests without a
 * network.
 */
export function recordingWebCallEndpoint(): { endpoint: WebCallEndpoint; events: ServerMessage[]; closed: number[] } {
  const events: ServerMessage[] = [];
  const closed: number[] = [];
  const socket = Object.assign(new EventEmitter(), {
    OPEN: 1,
    CLOSED: 3,
    readyState: 1,
    bufferedAmount: 0,
    send(data: unknown, _options?: unknown, done?: () => void) {
      if (typeof data === 'string') events.push(JSON.parse(data) as ServerMessage);
      done?.();
    },
    close(code: number) {
      closed.push(code);
      socket.readyState = 3;
    },
    terminate() {
      socket.readyState = 3;
    },
    ping() {},
    pause() {},
  });
  const counters = { audioDroppedSeconds: { inc() {} }, messagesDropped: { inc() {} }, floodDisconnections: { inc() {} } };
  const endpoint = new WebCallEndpoint(socket as unknown as WebSocket, 60_000, { counters: counters as never, now: () => performance.now() });
  return { endpoint, events, closed };
}
