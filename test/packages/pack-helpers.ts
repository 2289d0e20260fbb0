/** Packing a workspace package and using the tarball in a fresh project, as a user would. */
import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/process.ts';

/** Runs npm (offline: nothing here needs the registry) in `cwd`; fails the test on a non-zero exit. */
export function npm(args: string[], cwd: string): string {
  const run = spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' } });
  assert.equal(run.status, 0, `npm ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

/** `npm pack` of `dir` (relative to the repository) into `destination`: the tarball and its files, sorted. */
export function packPackage(dir: string, destination: string): { tarball: string; files: string[] } {
  const out = npm(['pack', '--json', '--ignore-scripts', '--pack-destination', destination], path.join(ROOT, dir));
  const [packed] = JSON.parse(out) as Array<{ filename: string; files: Array<{ path: string }> }>;
  assert.ok(packed);
  return { tarball: path.join(destination, packed.filename), files: packed.files.map((f) => f.path).sort() };
}

/** A fresh ESM project with a strict tsconfig (NodeNext resolution; DOM types where `dom`). */
export function strictProject(dir: string, options: { dom?: boolean } = {}): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true, type: 'module' }));
  const compilerOptions = {
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: options.dom ? ['ES2023', 'DOM'] : ['ES2023'],
    types: options.dom ? [] : ['node'],
    typeRoots: [path.join(ROOT, 'node_modules/@types')],
    skipLibCheck: false,
    noEmit: true,
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }, null, 2));
  return dir;
}

/** The repository's TypeScript over the project; stdout has the diagnostics. */
export function tsc(project: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project, encoding: 'utf8' });
}
