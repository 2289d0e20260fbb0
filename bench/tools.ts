/**
 * Custom-function benchmark: the service's own overhead per function call, against a local
 * backend answering at once.
 *
 *   node bench/tools.ts [--calls 2000]
 *
 * Three rows, each `calls` sequential requests to the same backend over kept-alive connections:
 *  - baseline: a plain `http.request` POST of a body of the same size (the backend's own time
 *    plus loopback: what any client pays);
 *  - function caller: the call read from the store (SQLite), the body built and signed with the
 *    account's agent-webhook secret, sent through the webhook client (destination policy checks);
 *  - flow engine: a `function` node entered and its result back (args rendered, the caller,
 *    response variables stored), as a call's engine runs it.
 * The overhead is each row's p50 minus the baseline's.
 *
 * Two more rows for a custom LLM (docs/custom-llm.md), against a local LLM WebSocket server that
 * answers every `response_required` at once with one complete response:
 *  - baseline: a plain `ws` client sending a `response_required` with a 10-utterance transcript and
 *    reading the answer;
 *  - custom-LLM engine: one turn through CustomLlmEngine over the service's socket (destination
 *    policy, frame and rate limits): the user's words in, the response's text out, what the agent
 *    said reported back (`update_only`). Connections are opened outside the timing; each carries
 *    5 turns, so transcripts stay at most 10 utterances long.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/config.ts';
import { createRuntime } from '../src/runtime.ts';
import { createSilentLogger } from '../src/lib/logger.ts';
import { systemClock } from '../src/lib/clock.ts';
import { DestinationPolicy } from '../src/webhooks/destination-policy.ts';
import { WebhookHttpClient } from '../src/webhooks/http-client.ts';
import { functionCallerFor } from '../src/webhooks/function-caller.ts';
import { FlowEngine } from '../src/voice/engines/flow.engine.ts';
import type { CustomFunction } from '../src/domain/custom-function.ts';
import type { ConversationFlowDefinition } from '../src/domain/conversation-flow.ts';
import { WebSocket, WebSocketServer } from 'ws';
import { CustomLlmEngine } from '../src/voice/engines/custom-llm.engine.ts';
import { llmSocketOpener } from '../src/media/llm-websocket.ts';
import { realScheduler } from '../src/lib/scheduler.ts';
import { wsDataToBuffer } from '../src/lib/ws-data.ts';
import { fmt, machine, percentile } from './lib.ts';

export interface ToolsBenchOptions {
  /** Requests per row (default 2000). */
  calls?: number;
  log?: (line: string) => void;
}

interface Row {
  name: string;
  p50: number;
  p99: number;
}

function summarize(name: string, samples: number[]): Row {
  const sorted = [...samples].sort((a, b) => a - b);
  return { name, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function timed(n: number, once: () => Promise<unknown>): Promise<number[]> {
  // Warm-up: connections, JIT, caches.
  for (let i = 0; i < Math.min(200, n); i++) await once();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await once();
    out.push(performance.now() - t0);
  }
  return out;
}

export async function runToolsBench(options: ToolsBenchOptions = {}): Promise<string> {
  const calls = options.calls ?? 2000;
  const log = options.log ?? (() => {});
  const backend = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"order":{"status":"shipped"}}'));
  });
  backend.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/orders`;

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-tools-'));
  const runtime = await createRuntime(loadConfig({ DATA_DIR: dataDir, PORT: '0', WEBHOOK_WORKER: 'false', LOG_LEVEL: 'warn', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }), { logger: createSilentLogger() });
  const client = new WebhookHttpClient({ policy: new DestinationPolicy(['127.0.0.1/32']), connectTimeoutMs: 5_000, timeoutMs: 10_000 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const account = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 10_000_000 });
    const fn: CustomFunction = { type: 'custom', name: 'lookup_order', url, response_variables: { order_status: 'order.status' } };
    const flow: ConversationFlowDefinition = {
      start_node_id: 'lookup',
      tools: [{ tool_id: 't', ...fn }],
      nodes: [
        { id: 'lookup', type: 'function', tool_id: 't', args: { order_id: '{{order_id}}' }, edges: [{ id: 'e', destination_node_id: 'done', transition_condition: { type: 'always' } }] },
        { id: 'done', type: 'end' },
      ],
      default_dynamic_variables: { order_id: '5551234' },
    };
    const created = await runtime.services.agents.createFlow(account.account_id, flow);
    const agentView = await runtime.services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: created.conversation_flow_id } });
    const principal = { accountId: account.account_id, keyId: 'bench', trialEndsAt: null, rateLimitPerMinute: 10_000_000, concurrencyLimit: null };
    const { call } = await runtime.services.calls.createWebCall(principal, { agent_id: agentView.agent_id });
    const caller = functionCallerFor({ client, secrets: runtime.services.webhooks, calls: runtime.services.calls, clock: systemClock, log: runtime.logger })(
      { accountId: account.account_id, callId: call.call_id },
      new AbortController().signal,
    );
    const row = await runtime.services.calls.readCall(call.call_id);
    const sampleBody = JSON.stringify({ call: row, name: fn.name, args: { order_id: '5551234' } });

    log(`tools: baseline, ${calls} plain POSTs`);
    const baseline = await timed(calls, () =>
      new Promise<void>((resolve, reject) => {
        const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(sampleBody) } }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end(sampleBody);
      }),
    );
    log(`tools: function caller, ${calls} calls`);
    const viaCaller = await timed(calls, async () => {
      const outcome = await caller.call(fn, { order_id: '5551234' });
      if (!outcome.ok) throw new Error(`function failed: ${outcome.content}`);
    });
    log(`tools: flow engine, ${calls} function nodes`);
    const viaEngine = await timed(calls, async () => {
      const engine = new FlowEngine({ flow, functions: caller });
      for await (const out of engine.begin(new AbortController().signal)) {
        if (out.type === 'tool_call_result' && !out.content.includes('shipped')) throw new Error('unexpected result');
      }
      if (engine.variables()['order_status'] !== 'shipped') throw new Error('response variable not set');
    });

    const rows = [summarize('baseline: plain POST', baseline), summarize('function caller (store read, sign, policy, send)', viaCaller), summarize('flow engine: function node to result', viaEngine)];
    const base = rows[0]!.p50;
    log(`tools: custom LLM, ${calls} turns each for the plain socket and the engine`);
    const llmRows = await customLlmRows(calls);
    const lines = [
      `Machine: ${machine()}. Load: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}. ${calls} sequential requests per row to a local backend answering at once, SQLite store.`,
      '',
      '| run | p50 ms | p99 ms | overhead at p50 ms |',
      '|---|---:|---:|---:|',
      ...rows.map((r) => `| ${r.name} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r === rows[0] ? '-' : fmt(r.p50 - base, 2)} |`),
      ...llmRows.map((r) => `| ${r.name} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r === llmRows[0] ? '-' : fmt(r.p50 - llmRows[0]!.p50, 2)} |`),
    ];
    return lines.join('\n');
  } finally {
    client.close();
    agent.destroy();
    await runtime.close();
    await new Promise<void>((r) => {
      backend.close(() => r());
      backend.closeAllConnections();
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The custom-LLM rows: a plain socket round trip, and one turn through the engine. */
async function customLlmRows(turns: number): Promise<Row[]> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (ws) => {
    ws.on('message', (data) => {
      const event = JSON.parse(wsDataToBuffer(data).toString('utf8')) as { interaction_type: string; response_id: number };
      if (event.interaction_type !== 'response_required') return;
      ws.send(JSON.stringify({ response_type: 'response', response_id: event.response_id, content: 'Your order has shipped.', content_complete: true }));
    });
  });
  await new Promise<void>((r) => server.once('listening', () => r()));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const transcript = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'user' : 'agent', content: 'Where is my order number 5551234?' }));
    const plain = new WebSocket(`${url}/plain`);
    await new Promise((r, j) => plain.once('open', r).once('error', j));
    let id = 0;
    const baseline = await timed(turns, () =>
      new Promise<void>((resolve) => {
        plain.once('message', () => resolve());
        plain.send(JSON.stringify({ interaction_type: 'response_required', response_id: ++id, transcript }));
      }),
    );
    plain.close();

    const policy = new DestinationPolicy(['127.0.0.1/32']);
    const open = llmSocketOpener({ lookup: policy.lookup, literalRefusal: (h) => policy.literalRefusal(h), userAgent: 'bench' });
    const newEngine = async () => {
      const engine = new CustomLlmEngine({
        url, callId: `call_${id++}`, open, callDetails: () => ({}), scheduler: realScheduler,
        onFailure: (reason, detail) => {
          throw new Error(`${reason}: ${detail}`);
        },
      });
      // Opens the connection (no begin message: the wait is cut by the signal).
      const ctrl = new AbortController();
      const begun = (async () => {
        for await (const out of engine.begin(ctrl.signal)) void out;
      })();
      await new Promise((r) => setTimeout(r, 5));
      ctrl.abort();
      await begun;
      return engine;
    };
    let engine = await newEngine();
    let used = 0;
    const samples: number[] = [];
    for (let i = 0; i < Math.min(200, turns) + turns; i++) {
      if (used === 5) {
        engine.close();
        engine = await newEngine();
        used = 0;
      }
      used++;
      const t0 = performance.now();
      let text = '';
      for await (const out of engine.respond('Where is my order number 5551234?', new AbortController().signal)) if (out.type === 'text') text += out.text;
      engine.agentSpoke(text, false);
      const ms = performance.now() - t0;
      if (text !== 'Your order has shipped.') throw new Error(`unexpected response: ${text}`);
      if (i >= Math.min(200, turns)) samples.push(ms);
    }
    engine.close();
    return [summarize('baseline: plain LLM WebSocket round trip', baseline), summarize('custom-LLM engine: one turn (socket, policy, protocol)', samples)];
  } finally {
    for (const ws of server.clients) ws.terminate();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--calls');
  process.stdout.write(`${await runToolsBench({ calls: i > 0 ? Number(process.argv[i + 1]) : 2000, log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
