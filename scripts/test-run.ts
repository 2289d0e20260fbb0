/**
 * The suite's runner, started by scripts/test.ts with the environment it prepared. It runs the
 * test files longest first, so that the long ones do not start last and run alone at the end of the
 * suite (node's own `--test` sorts files by name), and records how long each file took.
 *
 * The order comes from `.test-artifacts/durations.json`, written by the last whole run on this
 * machine, or else from the committed `test/durations.json`; files unknown to both run after the
 * known ones, by name. Arguments are the files to run (default: every test file).
 */
import fs from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

const LOCAL = '.test-artifacts/durations.json';
const COMMITTED = 'test/durations.json';

type Durations = Record<string, number>;

function readDurations(file: string): Durations | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Durations;
  } catch {
    return null;
  }
}

const requested = process.argv.slice(2);
const wholeSuite = requested.length === 0;
const files = (wholeSuite ? fs.globSync('test/**/*.test.ts') : requested.flatMap((pattern) => fs.globSync(pattern))).map((file) => path.relative('.', file));
const known = readDurations(LOCAL) ?? readDurations(COMMITTED) ?? {};
const ordered = [...new Set(files)].sort((a, b) => (known[b] ?? -1) - (known[a] ?? -1) || a.localeCompare(b));

const measured: Durations = {};
const stream = run({
  files: ordered.map((file) => path.resolve(file)),
  concurrency: Number(process.env.TEST_CONCURRENCY ?? '3'),
  timeout: 180_000,
});
const count = (event: { nesting: number; file?: string; details: { duration_ms: number } }) => {
  if (event.nesting !== 0 || !event.file) return;
  const file = path.relative('.', event.file);
  measured[file] = Math.round((measured[file] ?? 0) + event.details.duration_ms);
};
stream.on('test:pass', count);
stream.on('test:fail', (event) => {
  process.exitCode = 1;
  count(event);
});
stream.on('end', () => {
  if (!wholeSuite) return;
  fs.mkdirSync(path.dirname(LOCAL), { recursive: true });
  fs.writeFileSync(LOCAL, `${JSON.stringify(Object.fromEntries(Object.entries(measured).sort(([, a], [, b]) => b - a)), null, 1)}\n`);
});
stream.compose(spec).pipe(process.stdout);
