/** Shared pieces of the benchmarks: machine description, percentiles, wrk runs, child servers. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../scripts/postgres.ts';

export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.cpus().length} x ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!match) return NaN;
  const n = Number(match[1]);
  return match[2] === 'us' ? n / 1000 : match[2] === 'ms' ? n : match[2] === 's' ? n * 1000 : n * 60_000;
}

/** Runs wrk with a Lua script for method, headers and body; parses throughput and latency percentiles. */
export function wrk(options: {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Paths to cycle through, request by request (instead of the URL's own path). */
  paths?: string[];
  connections: number;
  durationS: number;
}): WrkResult {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-wrk-'));
  const script = path.join(dir, 'request.lua');
  const lines = [`wrk.method = ${JSON.stringify(options.method)}`];
  for (const [name, value] of Object.entries(options.headers)) lines.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`);
  if (options.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(options.body)}`);
  if (options.paths) {
    lines.push(`paths = { ${options.paths.map((p) => JSON.stringify(p)).join(', ')} }`, 'counter = 0');
    lines.push('request = function()', '  counter = counter + 1', '  return wrk.format(nil, paths[(counter % #paths) + 1])', 'end');
  }
  fs.writeFileSync(script, `${lines.join('\n')}\n`);
  const output = execFileSync('wrk', ['-t1', `-c${options.connections}`, `-d${options.durationS}s`, '--latency', '-s', script, options.url], {
    encoding: 'utf8',
  });
  fs.rmSync(dir, { recursive: true, force: true });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? NaN);
  const p50 = toMs(/\s50%\s+(\S+)/.exec(output)?.[1] ?? '');
  const p99 = toMs(/\s99%\s+(\S+)/.exec(output)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const errors = socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return { requestsPerSecond: rps, p50Ms: p50, p99Ms: p99, non2xx, errors };
}

export function hasCommand(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a Node script as a child; resolves with its base URL once it prints "listening at URL". */
export async function startChild(script: string, env: Record<string, string>, args: string[] = []) {
  const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/[\d.]+:\d+)/i.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited ${code}: ${output}`)));
  });
  return { baseUrl, stop: () => stopChild(child) };
}

export function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

/** Starts the Switchboard server on a free port and waits for /healthz. */
export async function startServerChild(script: string, env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { baseUrl, stop: () => stopChild(child) };
}

/** SIGTERM and wait for the exit (nothing to do if it has already exited). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

function words(t: string): string[] {
  return t.toLowerCase().split(/\s+/).filter(Boolean);
}

/** Word-level edit distance between reference and hypothesis. */
export function wordErrors(ref: string, hyp: string): { errors: number; words: number } {
  const r = words(ref);
  const h = words(hyp);
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const cur = [i];
    for (let j = 1; j <= h.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (r[i - 1] === h[j - 1] ? 0 : 1));
    prev = cur;
  }
  return { errors: prev[h.length]!, words: r.length };
}
