import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';

/** The voice pipeline stays split by responsibility: no file of src/voice/ grows past 450 lines. */
const MAX_LINES = 450;

it(`no file in src/voice/ is over ${MAX_LINES} lines`, () => {
  const root = path.resolve(import.meta.dirname, '../../src/voice');
  const files = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length > 10, 'found the voice files');
  const over = files
    .map((f) => ({ f, lines: fs.readFileSync(path.join(root, f), 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > MAX_LINES);
  assert.deepEqual(over, []);
});
