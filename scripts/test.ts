/**
 * `npm test`: type-checks, finds what this machine allows (PostgreSQL, pocketsphinx, chromium, haproxy),
 * runs the whole suite with node's test runner, and says plainly what it skipped and why.
 * With SWITCHBOARD_TEST_STRICT=1 (set by .ci/run) a missing capability or any skipped test fails.
 *
 * Extra arguments are test files or globs: `npm test -- test/api/calls.test.ts`. The runner is
 * scripts/test-run.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findPostgresBin, startCluster, type Cluster } from './postgres.ts';

const strict = process.env.SWITCHBOARD_TEST_STRICT === '1';
const env: Record<string, string | undefined> = { ...process.env };
const skipped: string[] = [];

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

// 1. Types.
say('# typecheck');
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (tsc.status !== 0) {
  say('typecheck failed');
  process.exit(1);
}

if (spawnSync(process.execPath, ['scripts/build-web.ts', '--typecheck'], { stdio: 'inherit' }).status !== 0) process.exit(1); // browser bundles (test/browser)

// 2. Capabilities.
let cluster: Cluster | null = null;
if (!env.TEST_DATABASE_URL) {
  const bin = findPostgresBin();
  if (bin) {
    try {
      cluster = await startCluster(bin);
      env.TEST_DATABASE_URL = cluster.url;
      say(`# PostgreSQL: throwaway cluster at ${cluster.url}`);
    } catch (error) {
      env.SWITCHBOARD_SKIP_POSTGRES = `could not start a throwaway cluster (${(error as Error).message.split('\n')[0]})`;
    }
  } else {
    env.SWITCHBOARD_SKIP_POSTGRES = 'PostgreSQL server binaries not found (apt-get install postgresql, or set TEST_DATABASE_URL)';
  }
} else {
  say('# PostgreSQL: TEST_DATABASE_URL');
}
if (env.SWITCHBOARD_SKIP_POSTGRES) skipped.push(`PostgreSQL: ${env.SWITCHBOARD_SKIP_POSTGRES}`);

const onPath = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
if (!onPath('pocketsphinx_continuous') || !fs.existsSync('/usr/share/pocketsphinx/model/en-us')) {
  skipped.push('pocketsphinx: not installed (apt-get install pocketsphinx pocketsphinx-en-us); embedded-recognition tests skip');
}
if (!fs.existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium')) {
  skipped.push('chromium: not installed (apt-get install chromium); browser tests skip');
}
if (!['/usr/sbin/haproxy', '/usr/bin/haproxy'].some((bin) => fs.existsSync(bin))) {
  skipped.push('haproxy: not installed (apt-get install haproxy); the multi-server test (test/process/cluster.test.ts) skips');
}
if (!onPath('turnserver')) {
  skipped.push('coturn: not installed (apt-get install coturn); the WebRTC-through-TURN tests (test/media/webrtc-network.test.ts) skip');
}
if (!onPath('baresip')) {
  skipped.push('baresip: not installed (apt-get install baresip); the SIP telephony tests (test/media/sip/) skip');
}
const walkthroughTools = ['flite', 'sox', 'curl', 'npm'].filter((tool) => !onPath(tool));
if (walkthroughTools.length > 0) {
  skipped.push(`${walkthroughTools.join(', ')}: not installed (bash scripts/setup.sh); the README walkthrough test (test/process/quick-start.test.ts) skips`);
}
for (const line of skipped) say(`# SKIPPING ${line}`);
if (strict && skipped.length > 0) {
  say('strict mode: every capability must be present; see scripts/setup.sh');
  cluster?.stop();
  process.exit(1);
}

// 3. The suite.
// Node's compile cache for every process of the run (the test files, and the servers and CLIs they
// start, which inherit the environment): each process otherwise strips the types of and compiles
// the same few hundred modules again, about half of a server's or CLI's start-up CPU. The cache is
// keyed by each file's content, so an edited file is compiled afresh. Set NODE_COMPILE_CACHE to use
// another directory.
env.NODE_COMPILE_CACHE ??= path.resolve('.test-artifacts/compile-cache');
// scripts/test-run.ts runs the files longest first, TEST_CONCURRENCY (default 3) at once.
const args = ['scripts/test-run.ts', ...process.argv.slice(2)];
const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
let tail = '';
child.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString('utf8')).slice(-4000);
});
const code: number = await new Promise((resolve) => child.on('close', (status) => resolve(status ?? 1)));
cluster?.stop();

const skippedTests = Number(/skipped (\d+)/.exec(tail)?.[1] ?? '0');
if (skipped.length > 0) {
  say('\nSkipped capabilities on this machine:');
  for (const line of skipped) say(`  - ${line}`);
}
if (strict && skippedTests > 0) {
  say(`strict mode: ${skippedTests} test(s) were skipped`);
  process.exit(1);
}
process.exit(code);
