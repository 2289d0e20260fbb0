/**
 * The README's quick start as a newcomer runs it: the tracked files copied to a fresh directory
 * (a clean checkout of this tree, node_modules linked in place of `npm ci`), `npm start` there, and
 * the walkthrough's shell block run exactly as written with bash, with the machine's own Node
 * first on PATH (the npm scripts bring Node 24 themselves). The walkthrough must create the flow
 * and agent, update the call it created, and be heard: the greeting says the updated company, the
 * caller's words take the booking branch, and the finished call says it succeeded.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { ROOT } from '../helpers/process.ts';

const TOOLS = ['npm', 'curl', 'flite', 'sox', 'bash'];
const missing = TOOLS.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
const skip = !hasPocketsphinx() ? NO_POCKETSPHINX : missing.length > 0 ? `not installed: ${missing.join(', ')} (bash scripts/setup.sh)` : false;

/** The README's walkthrough: the shell block after the "Walkthrough" heading. */
function walkthrough(readme: string): string {
  const m = /### Walkthrough[^\n]*\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, 'the README has a walkthrough block');
  return m[1]!;
}

/** PATH without this checkout's node_modules/.bin, so `node` is the machine's own. */
function machinePath(): string {
  return (process.env.PATH ?? '').split(path.delimiter).filter((dir) => !dir.includes(`node_modules${path.sep}.bin`)).join(path.delimiter);
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

describe("the README's quick start, from a fresh checkout", { skip, timeout: 240_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-quick-start-'));
  let server: ChildProcess | undefined;
  let baseUrl = '';
  let env: NodeJS.ProcessEnv = {};

  before(async () => {
    // A clean checkout: the files git tracks in this tree, as they are now.
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const file of files) {
      if (!fs.existsSync(path.join(ROOT, file))) continue; // deleted in the working tree
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|SWITCHBOARD_|DATABASE_URL|DATA_DIR|LOG_|PORT$|HOST$)/.test(name)));
    env = { ...inherited, PATH: machinePath(), PORT: String(port), ENV_FILE: '' };
    server = spawn('npm', ['start'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start printed no ready line within 90 s:\n${stderr}`)), 90_000);
      server!.stderr!.on('data', () => {
        if (stderr.includes('switchboard: ready.')) {
          clearTimeout(timer);
          resolve();
        }
      });
      server!.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${stderr}`)));
    });
  });

  after(async () => {
    if (server?.pid && server.exitCode === null) {
      process.kill(-server.pid, 'SIGTERM'); // npm and the server it started
      await once(server, 'exit');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs the walkthrough as written: the updated call is heard and ends on the booking branch', () => {
    const machineNode = spawnSync('node', ['--version'], { env, encoding: 'utf8' }).stdout.trim();
    const script = walkthrough(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'));
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: dir,
      env: { ...env, SWITCHBOARD_BASE_URL: baseUrl },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const said = `machine node ${machineNode}; exit ${run.status}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    assert.equal(run.status, 0, said);
    // Step 6 answers the call's status, step 7 the finished call's summary, step 8 whether the
    // call reached its goal.
    const [status, summary, successful, ...rest] = run.stdout.trim().split('\n');
    assert.equal(status, 'registered', said);
    assert.equal(JSON.parse(summary!).call_status, 'ended', said);
    assert.equal(successful, 'true', said);
    assert.deepEqual(rest, [], said);
    // Step 7 prints the conversation: the update was heard, and the caller's words took the branch.
    assert.match(run.stderr, /agent: Hello, thanks for calling Acme West\. How can I help\?/, said);
    assert.match(run.stderr, /node: greet -> book/, said);
    assert.match(run.stderr, /agent: You are booked\. Goodbye\./, said);
  });
});
