/**
 * API benchmark: create-web-call and update-call at 50 connections, beside a Fastify hello-world
 * baseline started by this script on this machine, on SQLite and on PostgreSQL. Needs `wrk`
 * (`apt-get install wrk`, or `SETUP_BENCH=1 bash scripts/setup.sh`).
 *
 *   node bench/api.ts [--duration 10] [--connections 50] [--stores sqlite,postgres]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { findPostgresBin, startCluster } from '../scripts/postgres.ts';
import { type WrkResult, fmt, hasCommand, machine, startChild, startServerChild, wrk } from './lib.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

export interface ApiBenchOptions {
  durationS: number;
  connections: number;
  stores: Array<'sqlite' | 'postgres'>;
}

export interface ApiBenchRow {
  name: string;
  result: WrkResult;
  ratio: number;
}

async function json(url: string, method: string, key: string, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<any>;
}

async function benchStore(store: 'sqlite' | 'postgres', databaseUrl: string | null, options: ApiBenchOptions, baseline: number) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  const created = execFileSync(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'keys', 'create', '--rate-limit', '100000000'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const key = JSON.parse(created).api_key as string;
  const server = await startServerChild(path.join(ROOT, 'src/main.ts'), env);
  try {
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
    const rows: ApiBenchRow[] = [];
    const createResult = wrk({
      url: `${server.baseUrl}/v2/create-web-call`,
      method: 'POST',
      headers,
      body: JSON.stringify({ agent_id: agent.agent_id, metadata: { customer: 'bench', n: 1 } }),
      connections: options.connections,
      durationS: options.durationS,
    });
    rows.push({ name: `create-web-call (${store})`, result: createResult, ratio: createResult.requestsPerSecond / baseline });
    const updateResult = wrk({
      url: `${server.baseUrl}/v2/update-call/${callIds[0]}`,
      paths: callIds.map((id) => `/v2/update-call/${id}`),
      method: 'PATCH',
      headers,
      body: JSON.stringify({ metadata: { stage: 'bench' }, override_dynamic_variables: { name: 'Ada' } }),
      connections: options.connections,
      durationS: options.durationS,
    });
    rows.push({ name: `update-call (${store})`, result: updateResult, ratio: updateResult.requestsPerSecond / baseline });
    return rows;
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runApiBench(options: ApiBenchOptions): Promise<string> {
  if (!hasCommand('wrk')) throw new Error('wrk is not installed: apt-get install wrk (or SETUP_BENCH=1 bash scripts/setup.sh)');
  const hello = await startChild(path.join(ROOT, 'bench/hello-server.ts'), {});
  let baselineResult: WrkResult;
  try {
    baselineResult = wrk({
      url: `${hello.baseUrl}/hello`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hello: 'world' }),
      connections: options.connections,
      durationS: options.durationS,
    });
  } finally {
    await hello.stop();
  }
  const baseline = baselineResult.requestsPerSecond;
  const rows: ApiBenchRow[] = [{ name: 'baseline: Fastify hello-world POST', result: baselineResult, ratio: 1 }];
  for (const store of options.stores) {
    if (store === 'sqlite') rows.push(...(await benchStore('sqlite', null, options, baseline)));
    else {
      const bin = findPostgresBin();
      if (!bin) {
        rows.push({ name: 'postgres: skipped (no PostgreSQL server binaries)', result: { requestsPerSecond: NaN, p50Ms: NaN, p99Ms: NaN, non2xx: 0, errors: 0 }, ratio: NaN });
        continue;
      }
      const cluster = await startCluster(bin);
      try {
        rows.push(...(await benchStore('postgres', cluster.url, options, baseline)));
      } finally {
        cluster.stop();
      }
    }
  }
  const lines = [
    `API benchmark, ${new Date().toISOString().slice(0, 10)}, ${machine()}`,
    `wrk -t1 -c${options.connections} -d${options.durationS}s; server LOG_LEVEL=warn`,
    '',
    '| run | req/s | p50 ms | p99 ms | vs baseline | non-2xx | socket errors |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.name} | ${fmt(row.result.requestsPerSecond, 0)} | ${fmt(row.result.p50Ms, 2)} | ${fmt(row.result.p99Ms, 2)} | ${fmt(row.ratio * 100, 0)}% | ${row.result.non2xx} | ${row.result.errors} |`,
    ),
  ];
  return lines.join('\n');
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' }, stores: { type: 'string', default: 'sqlite,postgres' } },
  });
  const report = await runApiBench({
    durationS: Number(values.duration),
    connections: Number(values.connections),
    stores: values.stores.split(',') as ApiBenchOptions['stores'],
  });
  process.stdout.write(`${report}\n`);
}
