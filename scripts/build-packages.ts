/**
 * Builds the publishable packages' `dist/` (what `npm pack` puts in the tarball):
 *   packages/web-sdk/dist   web-sdk.js (+ .map), the ESM bundle the server serves at /sdk/web-sdk.js,
 *                           and web-sdk.d.ts, its self-contained types (scripts/build-web.ts)
 *   packages/node/dist      index.js (+ .map), the Node client bundled with the server's webhook
 *                           verification (src/webhooks/verify.ts), and index.d.ts, its types with
 *                           the server's schema types (and TypeBox's) inlined
 *
 * `node scripts/build-packages.ts [web-sdk|node ...]` (all when none is named). Run by each package's
 * `prepack`, and by test/packages/ before packing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { generateDtsBundle } from 'dts-bundle-generator';
import { DEFAULT_WEB_OUT_DIR, buildWeb } from './build-web.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The packages this script builds, by directory name under packages/. */
export const PACKAGES = ['web-sdk', 'node'] as const;
export type PackageName = (typeof PACKAGES)[number];

/** Builds one package's dist/; returns the files written, relative to the package. */
export async function buildPackage(name: PackageName): Promise<string[]> {
  const dist = path.join(ROOT, 'packages', name, 'dist');
  fs.rmSync(dist, { recursive: true, force: true });
  fs.mkdirSync(dist, { recursive: true });
  if (name === 'node') return buildNode(dist);
  // The same build as the served bundle, so the package and /sdk/web-sdk.js never differ; into a
  // directory of its own, so pages being served from dist/web meanwhile never see a file half
  // written (the types built for dist/web are reused when their sources have not changed).
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-web-sdk-build-'));
  const served = path.join(DEFAULT_WEB_OUT_DIR, 'web-sdk.d.ts');
  if (fs.existsSync(served)) fs.copyFileSync(served, path.join(outDir, 'web-sdk.d.ts'));
  const web = await buildWeb({ outDir });
  const files = ['web-sdk.js', 'web-sdk.js.map', 'web-sdk.d.ts'];
  for (const file of files) {
    if (!web.files.includes(file)) throw new Error(`${file} was not built (is dts-bundle-generator installed?)`);
    fs.copyFileSync(path.join(web.outDir, file), path.join(dist, file));
  }
  fs.rmSync(outDir, { recursive: true, force: true });
  return files.map((file) => `dist/${file}`);
}

async function buildNode(dist: string): Promise<string[]> {
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { index: 'packages/node/src/index.ts' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: dist,
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const [types] = generateDtsBundle(
    [{ filePath: path.join(ROOT, 'packages/node/src/index.ts'), libraries: { inlinedLibraries: ['@sinclair/typebox'] }, output: { noBanner: true, exportReferencedTypes: false } }],
    { preferredConfigPath: path.join(ROOT, 'packages/node/tsconfig.types.json') },
  );
  if (types === undefined) throw new Error('dts-bundle-generator produced no declarations');
  fs.writeFileSync(path.join(dist, 'index.d.ts'), types);
  return ['dist/index.js', 'dist/index.js.map', 'dist/index.d.ts'];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const named = process.argv.slice(2);
  const unknown = named.filter((name) => !(PACKAGES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    process.stderr.write(`build-packages: unknown package ${unknown.join(', ')} (known: ${PACKAGES.join(', ')})\n`);
    process.exit(2);
  }
  for (const name of named.length > 0 ? (named as PackageName[]) : PACKAGES) {
    const files = await buildPackage(name);
    process.stdout.write(`# packages/${name}: ${files.join(', ')}\n`);
  }
}
