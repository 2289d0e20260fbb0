import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { TEST_WEBHOOK_SECRET_KEYS } from './stores.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** What the process guard logs for an error that escaped a call's boundary, or any call. */
const ESCAPED = ['"where":"uncaught_exception"', '"where":"unhandled_rejection"', 'uncaught error outside any call'];

/** `env` with WEBHOOK_SECRET_KEYS added when it names a PostgreSQL store and sets no key. */
export function withSharedKey(env: Record<string, string>): Record<string, string> {
  return env.DATABASE_URL && env.WEBHOOK_SECRET_KEYS === undefined ? { ...env, WEBHOOK_SECRET_KEYS: TEST_WEBHOOK_SECRET_KEYS } : env;
}

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Every line the server wrote to stdout (JSON logs). */
  lines: string[];
  /** What the server wrote to stderr so far (the start line for people, start-up failures). */
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `node src/main.ts` as a real child process and waits until it is ready (listening, engines
 * reported). The wait is bounded generously: three servers starting at once beside other test files
 * took over 20 s on a busy 2-core machine.
 */
export async function startServer(env: Record<string, string>, timeoutMs = 45_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT,
    // ENV_FILE empty: a .env in the checkout never reaches a test (a test names its own).
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ENV_FILE: '', ...withSharedKey(env) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let buffered = '';
  let listening: string | undefined;
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: its pipes would keep the test process alive after the failure.
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${timeoutMs} ms: ${stderr}\nits last lines on stdout:\n${lines.slice(-8).join('\n')}`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        lines.push(line);
        listening ??= /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1];
        // "switchboard ready" comes after the engine report, so tests see every start-up line.
        if (listening && line.includes('"switchboard ready"')) {
          clearTimeout(timer);
          resolve(listening);
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${stderr}`));
    });
  });
  return {
    child,
    baseUrl,
    lines,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, 'exit');
      // An error that escaped every call's boundary to the process guard (src/media/call-scope.ts)
      // is a test failure, as an unhandled rejection is in the test process itself.
      const escaped = lines.filter((line) => ESCAPED.some((text) => line.includes(text)));
      if (escaped.length > 0) throw new Error(`the server process logged ${escaped.length} error(s) that escaped to its process guard:\n${escaped.slice(0, 3).join('\n')}`);
      return code as number | null;
    },
  };
}

/** Runs the CLI as a child process; returns its exit code and output. */
export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ENV_FILE: '', ...withSharedKey(env) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = await once(child, 'exit');
  return { code: code as number, stdout, stderr };
}

