/**
 * A throwaway PostgreSQL cluster on loopback, for tests and benchmarks: initdb into a temporary
 * directory, pg_ctl start on a free port, trust authentication, and pg_ctl stop on close.
 * As root the server runs as the `postgres` user (initdb refuses root).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface Cluster {
  url: string;
  stop(): void;
}

/** The directory of PostgreSQL's server binaries, or null when the server is not installed. */
export function findPostgresBin(): string | null {
  const roots = ['/usr/lib/postgresql'];
  for (const root of roots) {
    if (!fs.existsSync(root)) continue;
    const versions = fs.readdirSync(root).sort((a, b) => Number(b) - Number(a));
    for (const version of versions) {
      const bin = path.join(root, version, 'bin');
      if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin;
    }
  }
  return null;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function startCluster(bin: string): Promise<Cluster> {
  const isRoot = process.getuid?.() === 0;
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-pg-'));
  const dataDir = path.join(base, 'data');
  const socketDir = path.join(base, 'sock');
  fs.mkdirSync(socketDir);
  const logFile = path.join(base, 'server.log');
  const port = await freePort();
  if (isRoot) {
    fs.chmodSync(base, 0o755);
    execFileSync('chown', ['-R', 'postgres:postgres', base]);
  }
  const run = (command: string, args: string[]) => {
    const result = isRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8' })
      : spawnSync(command, args, { encoding: 'utf8' });
    if (result.status !== 0) {
      const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '';
      throw new Error(`${path.basename(command)} failed: ${result.stderr || result.stdout}\n${log}`);
    }
  };
  run(path.join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  run(path.join(bin, 'pg_ctl'), [
    '-D', dataDir, '-l', logFile, '-w', '-t', '60',
    '-o', `-p ${port} -h 127.0.0.1 -k ${socketDir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`,
    'start',
  ]);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        fs.rmSync(base, { recursive: true, force: true });
      }
    },
  };
}
