/**
 * Webhook delivery benchmark: N events fanned out to K local receivers through the real outbox and
 * worker, on SQLite and PostgreSQL, beside a baseline of plain signed POSTs sent by one loop.
 *
 *   node bench/webhooks.ts [--events 2000] [--receivers 4] [--rate 500] [--stores sqlite,postgres]
 *
 * Two phases per store:
 *  - burst: N events recorded by 8 concurrent writers as fast as they commit; deliveries/s from
 *    the first event to the last receipt (the queue's throughput);
 *  - paced: events at `rate`/s and at half that (open loop: each starts on schedule, not after the previous one),
 *    p50/p99 from just before the event's transaction to its receipt at each receiver (the
 *    latency a user sees at that load).
 * The baseline signs and POSTs the same N x K bodies from one loop with no store at all: one at a
 * time (the floor of per-request cost) and with the worker's concurrency in flight.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/config.ts';
import { type Runtime, createRuntime } from '../src/runtime.ts';
import { deliveryBody, generateWebhookSecret, signedHeaders } from '../src/webhooks/signer.ts';
import { findPostgresBin, startCluster } from '../scripts/postgres.ts';
import { fmt, machine, percentile } from './lib.ts';
import { createSilentLogger } from '../src/lib/logger.ts';

export interface WebhookBenchOptions {
  /** Events per phase (default 2000). */
  events?: number;
  /** Receivers, each subscribed to every event (default 4). */
  receivers?: number;
  /** Events per second in the paced phase (default 500). */
  rate?: number;
  stores?: Array<'sqlite' | 'postgres'>;
  /** Worker concurrency (WEBHOOK_CONCURRENCY, default 64). */
  concurrency?: number;
  log?: (line: string) => void;
}

interface Row {
  name: string;
  deliveriesPerS: number;
  p50Ms: number;
  p99Ms: number;
  note: string;
}

/** Local receivers answering 200 at once; each receipt is timed by the lead name in the body. */
class Receivers {
  readonly servers: http.Server[] = [];
  readonly urls: string[] = [];
  /** name -> receipt times (performance.now()). */
  received = new Map<string, number[]>();
  count = 0;
  #waiter: { target: number; resolve: () => void } | null = null;

  async start(k: number): Promise<void> {
    for (let i = 0; i < k; i += 1) {
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const now = performance.now();
          res.writeHead(200).end();
          const body = Buffer.concat(chunks).toString('utf8');
          const name = /"name":"([^"]+)"/.exec(body)?.[1] ?? '';
          const list = this.received.get(name) ?? [];
          list.push(now);
          this.received.set(name, list);
          this.count += 1;
          if (this.#waiter && this.count >= this.#waiter.target) this.#waiter.resolve();
        });
      });
      server.keepAliveTimeout = 60_000;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      this.servers.push(server);
      this.urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
    }
  }

  reset(): void {
    this.received = new Map();
    this.count = 0;
  }

  waitFor(target: number, timeoutMs: number): Promise<void> {
    if (this.count >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`received ${this.count} of ${target}`)), timeoutMs);
      this.#waiter = { target, resolve: () => { clearTimeout(timer); this.#waiter = null; resolve(); } };
    });
  }

  async close(): Promise<void> {
    for (const server of this.servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
}

async function benchStore(store: 'sqlite' | 'postgres', o: Required<Omit<WebhookBenchOptions, 'stores' | 'log'>>, rx: Receivers, log: (l: string) => void): Promise<Row[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-whbench-'));
  let cluster: { url: string; stop(): void } | null = null;
  let runtime: Runtime | null = null;
  try {
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_CONCURRENCY: String(o.concurrency),
      WEBHOOK_ENDPOINT_CONCURRENCY: String(Math.max(8, Math.ceil(o.concurrency / o.receivers))),
      LOG_LEVEL: 'silent',
    };
    if (store === 'postgres') {
      const bin = findPostgresBin();
      if (!bin) throw new Error('PostgreSQL server binaries not found');
      cluster = await startCluster(bin);
      env.DATABASE_URL = cluster.url;
      env.WEBHOOK_SECRET_KEYS = randomBytes(32).toString('base64');
      env.DATABASE_POOL_SIZE = '20';
    }
    runtime = await createRuntime(loadConfig(env), { logger: createSilentLogger() });
    const account = await runtime.services.accounts.createAccount({ name: 'bench' });
    for (const url of rx.urls) await runtime.services.webhooks.setWebhook(account.account_id, { url, events: ['*'] });
    await runtime.services.webhookDispatcher.start();
    const leads = runtime.services.leads;
    const total = o.events * o.receivers;

    // Warm-up: connections, statement caches, JIT.
    rx.reset();
    for (let i = 0; i < 50; i += 1) await leads.createLead(account.account_id, { name: `warm${i}`, phone: '555-0100' });
    await rx.waitFor(50 * o.receivers, 30_000);

    // Burst.
    rx.reset();
    const burstStart = performance.now();
    // Eight writers at once, as concurrent API requests would be.
    let nextEvent = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (nextEvent < o.events) {
          const i = nextEvent++;
          await leads.createLead(account.account_id, { name: `b${i}`, phone: '555-0100' });
        }
      }),
    );
    const recorded = performance.now();
    await rx.waitFor(total, 120_000);
    const burstS = (performance.now() - burstStart) / 1000;
    log(`${store} burst: ${total} deliveries in ${fmt(burstS, 2)} s (events recorded in ${fmt((recorded - burstStart) / 1000, 2)} s)`);

    const rows: Row[] = [{ name: `${store}: burst`, deliveriesPerS: total / burstS, p50Ms: NaN, p99Ms: NaN, note: `${o.events} events x ${o.receivers} receivers` }];
    // Paced (open loop): event i is due at start + i / rate; at the full rate and at half of it.
    for (const rate of [o.rate, Math.round(o.rate / 2)]) {
      rx.reset();
      const sentAt = new Map<string, number>();
      const pacedStart = performance.now();
      const writes: Array<Promise<unknown>> = [];
      for (let i = 0; i < o.events; i += 1) {
        const due = pacedStart + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const name = `p${rate}-${i}`;
        sentAt.set(name, performance.now());
        // Open loop: the next event does not wait for this one's transaction.
        writes.push(leads.createLead(account.account_id, { name, phone: '555-0100' }));
      }
      await Promise.all(writes);
      await rx.waitFor(total, 120_000);
      const pacedS = (performance.now() - pacedStart) / 1000;
      const latencies: number[] = [];
      for (const [name, times] of rx.received) {
        const t0 = sentAt.get(name);
        if (t0 !== undefined) for (const t of times) latencies.push(t - t0);
      }
      latencies.sort((a, b) => a - b);
      rows.push({
        name: `${store}: paced ${rate} events/s`,
        deliveriesPerS: total / pacedS,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        note: `offered ${rate * o.receivers} deliveries/s`,
      });
    }
    return rows;
  } finally {
    await runtime?.close();
    cluster?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Signs and POSTs every body from one loop: `inFlight` at a time, keep-alive, no store. */
async function baseline(rx: Receivers, events: number, inFlight: number): Promise<Row> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  const secret = generateWebhookSecret();
  const jobs: Array<{ url: string; name: string }> = [];
  for (let i = 0; i < events; i += 1) for (const url of rx.urls) jobs.push({ url, name: `x${i}` });
  rx.reset();
  const latencies: number[] = [];
  const post = (job: { url: string; name: string }) =>
    new Promise<void>((resolve, reject) => {
      const t0 = performance.now();
      const now = Date.now();
      const body = deliveryBody('lead.created', JSON.stringify({ id: 1, name: job.name, phone: '555-0100' }), now);
      const headers = signedHeaders(secret, 'lead.created', `evt_${job.name}`, now, body);
      const req = http.request(job.url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - t0);
          resolve();
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  const start = performance.now();
  let next = 0;
  // One loop: a fixed number of chains, each taking the next job when its POST completes.
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs.length) await post(jobs[next++]!);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    name: `baseline: one loop, ${inFlight} in flight`,
    deliveriesPerS: jobs.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    note: 'signed POSTs, no store, no queue',
  };
}

/** Runs the benchmark and returns a Markdown table with ratios to the baseline. */
export async function runWebhookBench(options: WebhookBenchOptions = {}): Promise<string> {
  const o = {
    events: options.events ?? 2000,
    receivers: options.receivers ?? 4,
    rate: options.rate ?? 500,
    concurrency: options.concurrency ?? 64,
  };
  const stores = options.stores ?? ['sqlite', 'postgres'];
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rx = new Receivers();
  await rx.start(o.receivers);
  const rows: Row[] = [];
  try {
    const sequential = await baseline(rx, o.events, 1);
    const parallel = await baseline(rx, o.events, o.concurrency);
    rows.push(sequential, parallel);
    for (const store of stores) {
      try {
        rows.push(...(await benchStore(store, o, rx, log)));
      } catch (error) {
        log(`${store}: skipped (${(error as Error).message.split('\n')[0]})`);
      }
    }
  } finally {
    await rx.close();
  }
  const base = rows[1] as Row;
  const lines = [
    `Machine: ${machine()}. ${o.events} events, ${o.receivers} receivers on loopback answering 200 at once, worker concurrency ${o.concurrency}.`,
    '',
    '| run | deliveries/s | vs baseline (in flight) | p50 ms | p99 ms | notes |',
    '|---|---:|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.deliveriesPerS, 0)} | ${fmt(r.deliveriesPerS / base.deliveriesPerS, 2)}x | ${Number.isNaN(r.p50Ms) ? '-' : fmt(r.p50Ms, 1)} | ${Number.isNaN(r.p99Ms) ? '-' : fmt(r.p99Ms, 1)} | ${r.note} |`,
    ),
    '',
    'Latency of the store rows: from just before the event\'s transaction to receipt at the receiver (event to receipt); of the baseline rows: one POST, request to response.',
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const stores = arg('stores')?.split(',') as Array<'sqlite' | 'postgres'> | undefined;
  const table = await runWebhookBench({
    events: arg('events') ? Number(arg('events')) : undefined,
    receivers: arg('receivers') ? Number(arg('receivers')) : undefined,
    rate: arg('rate') ? Number(arg('rate')) : undefined,
    stores,
  });
  process.stdout.write(`${table}\n`);
}
