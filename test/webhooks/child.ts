import { type ChildProcess, spawn } from 'node:child_process';
import { withSharedKey } from '../helpers/process.ts';

export interface ChildServer {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
}

/** Starts `node src/main.ts` with `env`; resolves once it logs the address it listens on. */
export async function startServer(env: Record<string, string>): Promise<ChildServer> {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...withSharedKey(env) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output.slice(-3000)}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output.slice(-3000)}`));
    });
  });
  child.removeAllListeners('exit');
  return { child, baseUrl, output: () => output };
}

/** Kills with SIGKILL (no shutdown of any kind) and waits for the exit. */
export async function kill9(server: ChildServer): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  server.child.kill('SIGKILL');
  await exited;
}

/** SIGTERM and wait (graceful stop). */
export async function stop(server: ChildServer): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  server.child.kill('SIGTERM');
  await exited;
}
