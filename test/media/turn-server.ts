/**
 * A real TURN server for WebRTC tests: Debian's coturn (`turnserver`, scripts/setup.sh) as a child
 * process on loopback, taking time-limited credentials (the TURN REST scheme, `use-auth-secret`) as
 * docs/deploy.md sets it up. Loopback peers are allowed: the media server it relays to is on
 * 127.0.0.1 here.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Why coturn tests skip here, or false when `turnserver` is installed. */
export const TURN_SKIP: string | false =
  spawnSync('sh', ['-c', 'command -v turnserver']).status === 0 ? false : 'coturn is not installed (apt-get install coturn; scripts/setup.sh)';

export interface TurnServer {
  port: number;
  /** Everything coturn logged so far. */
  log(): string;
  close(): Promise<void>;
}

/** A free TCP port on loopback (coturn listens on it for both UDP and TCP). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startTurnServer(secret: string): Promise<TurnServer> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turn-'));
  const child: ChildProcess = spawn(
    'turnserver',
    [
      '-n', // no configuration file: everything is on the command line
      '--listening-ip=127.0.0.1',
      '--relay-ip=127.0.0.1',
      `--listening-port=${port}`,
      '--use-auth-secret',
      `--static-auth-secret=${secret}`,
      '--realm=switchboard.test',
      '--allow-loopback-peers',
      '--no-tls',
      '--no-dtls',
      '--no-cli',
      '--fingerprint',
      `--pidfile=${path.join(dir, 'turnserver.pid')}`,
      '--log-file=stdout',
      '--simple-log',
      '--verbose',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Ready once it takes TCP connections on its port.
  const started = Date.now();
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) break;
    if (child.exitCode !== null || Date.now() - started > 10_000) {
      child.kill('SIGKILL');
      throw new Error(`turnserver did not start: ${output.slice(-2_000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    log: () => output,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
