/**
 * Builds the browser bundles into dist/web/ with esbuild (about half a second):
 *   web-sdk.js      the browser SDK (ESM), its AudioWorklets inlined as strings
 *   web-sdk.d.ts    its types in one self-contained file (dts-bundle-generator, with the
 *                   protocol's TypeBox types inlined; rebuilt only when its sources change)
 *   demo.js         the /demo page
 *   dashboard.js    the /dashboard single-page app (Preact), and its lazily loaded chunks
 *                   dashboard-*-HASH.js (the flow drawing with its layout library, and their shared code)
 *   app.css         the pages' stylesheet
 *
 * `node scripts/build-web.ts [--typecheck] [--out DIR]`. `--typecheck` first type-checks
 * packages/web-sdk and web/ (their own tsconfig.json: DOM and AudioWorklet types). Run by
 * `npm start` (prestart) and by `npm test` before the suite.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import type * as DtsBundleGenerator from 'dts-bundle-generator';

const ROOT = path.resolve(import.meta.dirname, '..');
export const DEFAULT_WEB_OUT_DIR = path.join(ROOT, 'dist/web');

export interface BuildWebOptions {
  /** Output directory (default dist/web). */
  outDir?: string;
  /** Minify the bundles (default true). */
  minify?: boolean;
}

export interface BuildWebResult {
  outDir: string;
  files: string[];
  durationMs: number;
}

/** Bundles the SDK, the demo page and the dashboard. */
export async function buildWeb(options: BuildWebOptions = {}): Promise<BuildWebResult> {
  const started = performance.now();
  const outDir = options.outDir ?? DEFAULT_WEB_OUT_DIR;
  const minify = options.minify ?? true;
  fs.mkdirSync(outDir, { recursive: true });

  // 1. The AudioWorklets, as self-contained scripts to inline in the SDK (loaded from Blob URLs,
  //    so a page needs no extra file and no extra route).
  const worklets = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: {
      capture: 'packages/web-sdk/src/worklets/capture.worklet.ts',
      playback: 'packages/web-sdk/src/worklets/playback.worklet.ts',
    },
    bundle: true,
    write: false,
    format: 'iife',
    target: 'es2022',
    minify,
    outdir: 'worklets',
    logLevel: 'silent',
  });
  const source = (name: string) => {
    const file = worklets.outputFiles.find((f) => path.basename(f.path) === `${name}.js`);
    if (!file) throw new Error(`worklet ${name} was not built`);
    return JSON.stringify(file.text);
  };

  // 2. The SDK and the pages. The SDK and the demo are single files; the dashboard is split: the
  //    flow drawing (its layout library) is a chunk loaded only when a flow is opened.
  const common: esbuild.BuildOptions & { metafile: true } = {
    absWorkingDir: ROOT,
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify,
    sourcemap: 'linked',
    outdir: outDir,
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
    define: {
      __SWITCHBOARD_CAPTURE_WORKLET__: source('capture'),
      __SWITCHBOARD_PLAYBACK_WORKLET__: source('playback'),
    },
  };
  // Chunk names carry a content hash: drop the previous build's.
  for (const stale of fs.readdirSync(outDir).filter((f) => /^dashboard-[\w-]+-[A-Z0-9]{8}\.js(\.map)?$/.test(f))) fs.rmSync(path.join(outDir, stale));
  const result = await esbuild.build({
    ...common,
    entryPoints: { 'web-sdk': 'packages/web-sdk/src/index.ts', demo: 'web/demo/main.tsx' },
    splitting: false,
  });
  const dashboard = await esbuild.build({
    ...common,
    entryPoints: { dashboard: 'web/dashboard/main.tsx' },
    splitting: true,
    chunkNames: 'dashboard-[name]-[hash]',
  });
  fs.copyFileSync(path.join(ROOT, 'web/shared/app.css'), path.join(outDir, 'app.css'));
  const types = await buildSdkTypes(outDir);
  const outputs = [...Object.keys(result.metafile.outputs), ...Object.keys(dashboard.metafile.outputs)];
  const files = [...outputs.map((f) => path.basename(f)), 'app.css', ...(types ? [types] : [])].sort();
  fs.writeFileSync(path.join(outDir, 'manifest.json'), `${JSON.stringify({ built_at: new Date().toISOString(), files }, null, 2)}\n`);
  return { outDir, files, durationMs: Math.round(performance.now() - started) };
}

/** Where the SDK's declarations come from: its sources and the protocol it imports. */
const SDK_TYPE_SOURCES = ['packages/web-sdk/src', 'src/protocol', 'packages/web-sdk/tsconfig.json', 'packages/web-sdk/tsconfig.types.json'];
const SDK_TYPES_FILE = 'web-sdk.d.ts';

/**
 * Bundles the SDK's declarations into `outDir/web-sdk.d.ts`: one file, no imports (TypeBox's
 * types, which the protocol's message types are written in, are inlined), so a project with no
 * other package compiles against it. Takes seconds, so it is skipped when the file's first line
 * already names the hash of its sources. Returns the file name, or null where dts-bundle-generator
 * is not installed (a production install without dev dependencies: /sdk/web-sdk.d.ts is then 404).
 */
export async function buildSdkTypes(outDir: string): Promise<string | null> {
  const hash = createHash('sha256');
  for (const source of SDK_TYPE_SOURCES) {
    const full = path.join(ROOT, source);
    const files = fs.statSync(full).isDirectory() ? fs.readdirSync(full, { recursive: true, encoding: 'utf8' }).sort().map((f) => path.join(full, f)) : [full];
    for (const file of files) {
      if (!fs.statSync(file).isFile()) continue;
      hash.update(path.relative(ROOT, file)).update('\0').update(fs.readFileSync(file));
    }
  }
  const stamp = `// @switchboard/web-sdk types, sources ${hash.digest('hex').slice(0, 16)}`;
  const target = path.join(outDir, SDK_TYPES_FILE);
  if (fs.existsSync(target) && fs.readFileSync(target, 'utf8').startsWith(`${stamp}\n`)) return SDK_TYPES_FILE;
  let generator: typeof DtsBundleGenerator;
  try {
    generator = await import('dts-bundle-generator');
  } catch {
    process.stderr.write('build-web: dts-bundle-generator is not installed (dev dependency): web-sdk.d.ts not built\n');
    return null;
  }
  const [types] = generator.generateDtsBundle(
    [{ filePath: path.join(ROOT, 'packages/web-sdk/src/index.ts'), libraries: { inlinedLibraries: ['@sinclair/typebox'] }, output: { noBanner: true } }],
    { preferredConfigPath: path.join(ROOT, 'packages/web-sdk/tsconfig.types.json') },
  );
  if (types === undefined) throw new Error('dts-bundle-generator produced no declarations');
  fs.writeFileSync(target, `${stamp}\n${types}`);
  return SDK_TYPES_FILE;
}

/** Type-checks the browser sources (each has its own tsconfig.json); returns false on errors. */
export function typecheckWeb(): boolean {
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  let ok = true;
  for (const project of ['packages/web-sdk', 'web']) {
    const run = spawnSync(process.execPath, [tsc, '--noEmit', '-p', project], { cwd: ROOT, stdio: 'inherit' });
    if (run.status !== 0) ok = false;
  }
  return ok;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const outDir = outIndex >= 0 && args[outIndex + 1] ? path.resolve(args[outIndex + 1]!) : undefined;
  if (args.includes('--typecheck')) {
    process.stdout.write('# typecheck browser sources (packages/web-sdk, web)\n');
    if (!typecheckWeb()) {
      process.stderr.write('build-web: type errors in the browser sources\n');
      process.exit(1);
    }
  }
  try {
    const built = await buildWeb({ outDir });
    process.stdout.write(`# web bundles: ${built.files.join(', ')} -> ${path.relative(ROOT, built.outDir) || '.'} in ${built.durationMs} ms\n`);
  } catch (error) {
    process.stderr.write(`build-web: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
