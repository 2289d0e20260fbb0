// Flite in its worker thread: what it leaves behind on the machine.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { ProviderError } from '../../src/providers/errors.ts';

// A temp directory of this file's own, so leftovers of other processes do not count.
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-flite-test-'));
process.env.TMPDIR = TMP;
test.after(() => fs.rmSync(TMP, { recursive: true, force: true }));

/** Files this process holds open under a Flite output directory. */
function openFliteFiles(): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).includes('switchboard-flite-')) n++;
    } catch {
      // closed while we looked
    }
  }
  return n;
}

function fliteDirs(): string[] {
  return fs.readdirSync(TMP).filter((d) => d.startsWith('switchboard-flite-'));
}

async function speak(tts: FliteTts, text: string, signal?: AbortSignal): Promise<number> {
  let samples = 0;
  for await (const c of tts.synthesize(text, signal ? { signal } : {})) samples += c.length;
  return samples;
}

test('flite: syntheses leave no open files behind, and close() removes the output directory', async () => {
  const tts = new FliteTts();
  for (let i = 0; i < 20; i++) assert.ok((await speak(tts, `Sentence number ${i}.`)) > 1600);
  // Before the fix each synthesis kept the output directory open: 20 syntheses, 20 open files.
  assert.equal(openFliteFiles(), 0);
  assert.equal(fliteDirs().length, 1);
  await tts.close();
  assert.deepEqual(fliteDirs(), []);
  await tts.close();
});

test('flite: close() during a synthesis rejects it at once and still removes the directory', async () => {
  const tts = new FliteTts();
  await tts.warm();
  const long = Array.from({ length: 40 }, (_, i) => `This is sentence ${i} of a long reply.`).join(' ');
  const pending = speak(tts, long);
  const closed = tts.close();
  await assert.rejects(pending, (e) => e instanceof ProviderError && e.kind === 'tts');
  await closed;
  assert.deepEqual(fliteDirs(), []);
  await assert.rejects(speak(tts, 'Too late.'), (e) => e instanceof ProviderError && /closed/.test(e.message));
});
