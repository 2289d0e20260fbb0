// Issue 27: one npm script builds and packs both packages on any Node (run here by the machine's
// npm, whatever its Node; the script's `node` is the project's Node 24 from node_modules/.bin),
// and each package's README gives exactly that command until the packages are published.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from '../helpers/process.ts';

const TARBALLS = ['switchboard-node-0.1.0.tgz', 'switchboard-web-sdk-0.1.0.tgz'];

describe('npm run pack:packages', () => {
  after(() => {
    for (const t of TARBALLS) fs.rmSync(path.join(ROOT, t), { force: true });
  });

  it('builds and packs both packages; the packages READMEs say so', { timeout: 300_000 }, () => {
    for (const dir of ['node', 'web-sdk']) {
      const readme = fs.readFileSync(path.join(ROOT, 'packages', dir, 'README.md'), 'utf8');
      assert.match(readme, /npm ci\nnpm run -s pack:packages/, `packages/${dir}/README.md says how to build it`);
      assert.match(readme, new RegExp(`npm install /path/to/switchboard/switchboard-${dir}-0[.]1[.]0[.]tgz`));
    }
    for (const t of TARBALLS) fs.rmSync(path.join(ROOT, t), { force: true });
    const run = spawnSync('npm', ['run', '-s', 'pack:packages'], {
      cwd: ROOT,
      encoding: 'utf8',
      // The machine's npm on the machine's Node: no node_modules/.bin of this checkout before it on PATH.
      env: { ...process.env, PATH: (process.env['PATH'] ?? '').split(path.delimiter).filter((p) => !p.includes(`node_modules${path.sep}.bin`)).join(path.delimiter), npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    });
    assert.equal(run.status, 0, run.stderr);
    for (const t of TARBALLS) assert.ok(fs.statSync(path.join(ROOT, t)).size > 1000, `${t} written`);
    assert.deepEqual(run.stdout.trim().split('\n').slice(-2), TARBALLS);
  });
});
