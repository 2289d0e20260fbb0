/**
 * `npm run lint`: ESLint with type information (eslint.config.js), then the import boundaries
 * (.dependency-cruiser.cjs over everything, .dependency-cruiser.browser.cjs over what the browser
 * bundles contain). Every step runs even when an earlier one failed, so one run shows all problems;
 * the exit code is non-zero when any step failed.
 */
import { spawnSync } from 'node:child_process';

const TREES = ['src', 'test', 'bench', 'scripts', 'packages/web-sdk/src', 'packages/node/src', 'web'];
const BROWSER = ['packages/web-sdk/src', 'web'];

const steps: { name: string; bin: string; args: string[] }[] = [
  { name: 'eslint', bin: 'node_modules/eslint/bin/eslint.js', args: TREES },
  { name: 'import boundaries', bin: 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs', args: ['--config', '.dependency-cruiser.cjs', ...TREES] },
  {
    name: 'browser bundles',
    bin: 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs',
    args: ['--config', '.dependency-cruiser.browser.cjs', ...BROWSER],
  },
];

const failed: string[] = [];
for (const step of steps) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [step.bin, ...step.args], { stdio: 'inherit' });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`# lint: ${step.name} ${run.status === 0 ? 'passed' : 'FAILED'} in ${seconds} s\n`);
  if (run.status !== 0) failed.push(step.name);
}
if (failed.length > 0) {
  process.stdout.write(`# lint failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
