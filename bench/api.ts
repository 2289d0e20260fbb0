/**
 * API benchmark: create-web-call and update-call at 50 connections, beside a Fastify hello-world
 * baseline started by this script on this machine, on SQLite and on PostgreSQL. Needs `wrk`
 * (`apt-get install wrk`, or `SETUP_BENCH=1 bash scripts/setup.sh`).
 *
 * The machine is shared and its speed drifts by tens of percent within minutes, so the runs are
 * interleaved: every round measures the baseline and then each target, one after the other, and
 * a target's ratio is taken against the baseline of its own round. The table reports the median
 * of the rounds and each round's ratio. Every server is warmed up first (JIT, caches, WAL), unrecorded.
 *
 *   node bench/api.ts [--duration 10] [--connections 50] [--rounds 5] [--stores sqlite,postgres]
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { findPostgresBin, startCluster } from '../scripts/postgres.ts';
import { type WrkResult, fmt, hasCommand, machine, startChild, startServerChild, wrk } from './lib.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const WARMUP_S = 3;

export interface ApiBenchOptions {
  durationS: number;
  connections: number;
  rounds: number;
  stores: Array<'sqlite' | 'postgres'>;
}

type WrkRequest = Omit<Parameters<typeof wrk>[0], 'connections' | 'durationS'>;

interface Target {
  name: string;
  request: WrkRequest;
  results: WrkResult[];
}

async function json(url: string, method: string, key: string, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Starts a server on `store` with an account, a flow agent and 100 calls; returns its two targets. */
async function startStore(store: 'sqlite' | 'postgres', databaseUrl: string | null, cleanup: Array<() => Promise<void> | void>): Promise<Target[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...(databaseUrl ? { DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64') } : {}) };
  const created = execFileSync(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'keys', 'create', '--rate-limit', '100000000'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const key = JSON.parse(created).api_key as string;
  const server = await startServerChild(path.join(ROOT, 'src/main.ts'), env);
  cleanup.push(() => server.stop());
  const flow = await json(`${server.baseUrl}/create-conversation-flow`, 'POST', key, {
    start_node_id: 'hi',
    nodes: [{ id: 'hi', type: 'end', instruction: { type: 'static_text', text: 'Hello and goodbye.' } }],
  });
  const agent = await json(`${server.baseUrl}/create-agent`, 'POST', key, {
    response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id },
  });
  // update-call spreads over 100 calls, as real traffic does (one row would measure its lock).
  const callIds: string[] = [];
  for (let i = 0; i < 100; i++) callIds.push((await json(`${server.baseUrl}/v2/create-web-call`, 'POST', key, { agent_id: agent.agent_id })).call_id);
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  return [
    {
      name: `create-web-call (${store})`,
      request: {
        url: `${server.baseUrl}/v2/create-web-call`,
        method: 'POST',
        headers,
        body: JSON.stringify({ agent_id: agent.agent_id, metadata: { customer: 'bench', n: 1 } }),
      },
      results: [],
    },
    {
      name: `update-call (${store})`,
      request: {
        url: `${server.baseUrl}/v2/update-call/${callIds[0]}`,
        paths: callIds.map((id) => `/v2/update-call/${id}`),
        method: 'PATCH',
        headers,
        body: JSON.stringify({ metadata: { stage: 'bench' }, override_dynamic_variables: { name: 'Ada' } }),
      },
      results: [],
    },
  ];
}

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export async function runApiBench(options: ApiBenchOptions, log: (line: string) => void = () => {}): Promise<string> {
  if (!hasCommand('wrk')) throw new Error('wrk is not installed: apt-get install wrk (or SETUP_BENCH=1 bash scripts/setup.sh)');
  const cleanup: Array<() => Promise<void> | void> = [];
  const skipped: string[] = [];
  try {
    const hello = await startChild(path.join(ROOT, 'bench/hello-server.ts'), {});
    cleanup.push(() => hello.stop());
    const baseline: Target = {
      name: 'baseline: Fastify hello-world POST',
      request: { url: `${hello.baseUrl}/hello`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hello: 'world' }) },
      results: [],
    };
    const targets: Target[] = [];
    for (const store of options.stores) {
      if (store === 'sqlite') targets.push(...(await startStore('sqlite', null, cleanup)));
      else {
        const bin = findPostgresBin();
        if (!bin) {
          skipped.push('postgres: skipped (no PostgreSQL server binaries)');
          continue;
        }
        const cluster = await startCluster(bin);
        cleanup.push(() => cluster.stop());
        targets.push(...(await startStore('postgres', cluster.url, cleanup)));
      }
    }

    const run = (target: Target, durationS: number) => wrk({ ...target.request, connections: options.connections, durationS });
    for (const target of [baseline, ...targets]) {
      log(`warming up ${target.name}`);
      run(target, WARMUP_S);
    }
    for (let round = 1; round <= options.rounds; round++) {
      for (const target of [baseline, ...targets]) {
        log(`round ${round}/${options.rounds}: ${target.name}`);
        target.results.push(run(target, options.durationS));
      }
    }

    const ratios = (target: Target) => target.results.map((result, i) => result.requestsPerSecond / baseline.results[i]!.requestsPerSecond);
    const row = (target: Target) => {
      const perRound = ratios(target);
      const sum = (pick: (r: WrkResult) => number) => target.results.reduce((total, r) => total + pick(r), 0);
      return `| ${target.name} | ${fmt(median(target.results.map((r) => r.requestsPerSecond)), 0)} | ${fmt(median(target.results.map((r) => r.p50Ms)), 2)} | ${fmt(median(target.results.map((r) => r.p99Ms)), 2)} | ${fmt(median(perRound) * 100, 0)}% | ${perRound.map((r) => `${fmt(r * 100, 0)}%`).join(', ')} | ${target.results.map((r) => fmt(r.p99Ms, 1)).join(', ')} | ${sum((r) => r.non2xx)} | ${sum((r) => r.errors)} |`;
    };
    return [
      `API benchmark, ${new Date().toISOString().slice(0, 10)}, ${machine()}`,
      `wrk -t1 -c${options.connections}, ${options.rounds} interleaved rounds of ${options.durationS} s per run after a ${WARMUP_S} s warm-up; medians of the rounds; server LOG_LEVEL=warn`,
      '',
      '| run | req/s | p50 ms | p99 ms | vs baseline | vs baseline, each round | p99 ms, each round | non-2xx | socket errors |',
      '|---|---|---|---|---|---|---|---|---|',
      row(baseline),
      ...targets.map(row),
      ...skipped.map((line) => `| ${line} | | | | | | | | |`),
    ].join('\n');
  } finally {
    for (const step of cleanup.reverse()) await step();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      rounds: { type: 'string', default: '5' },
      stores: { type: 'string', default: 'sqlite,postgres' },
    },
  });
  const report = await runApiBench(
    {
      durationS: Number(values.duration),
      connections: Number(values.connections),
      rounds: Number(values.rounds),
      stores: values.stores.split(',') as ApiBenchOptions['stores'],
    },
    (line) => process.stderr.write(`${line}\n`),
  );
  process.stdout.write(`${report}\n`);
}
