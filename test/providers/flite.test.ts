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

/**
 * WebAssembly memories this process holds: V8 reserves each with its guard regions (about 10 GB
 * of address space, nothing else here maps that much), freed when the memory is collected.
 */
function wasmMemories(): number {
  let n = 0;
  for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) ---p/.exec(line);
    if (m && parseInt(m[2]!, 16) - parseInt(m[1]!, 16) >= 4 * 2 ** 30) n++;
  }
  return n;
}

test("flite: once idle, the worker collects the syntheses' instances, so their WebAssembly memories (17 MB each) do not stay resident", async () => {
  const tts = new FliteTts();
  try {
    const before = wasmMemories();
    for (let i = 0; i < 8; i++) await speak(tts, `Sentence number ${i}.`);
    const busy = wasmMemories() - before;
    assert.ok(busy >= 3, `the syntheses' memories were there (${busy})`);
    // Without collecting, 3-5 of them stayed for good (the worker's JS heap is too small to
    // make V8 collect): 50-85 MB of the server's RSS after the calls.
    let left = busy;
    // One may stay: the last instance, still referenced by the worker.
    for (let waited = 0; waited < 4_000 && left > 1; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      left = wasmMemories() - before;
    }
    assert.ok(left <= 1, `${left} synthesis memories still mapped after 4 s idle`);
    assert.ok((await speak(tts, 'Still speaking.')) > 1600, 'the worker synthesises after collecting');
  } finally {
    await tts.close();
  }
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

/** Every sample of `text` said with `options`. */
async function pcmOf(tts: FliteTts, text: string, options: Parameters<FliteTts['synthesize']>[1] = {}): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for await (const c of tts.synthesize(text, options)) chunks.push(c);
  const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const same = (a: Int16Array, b: Int16Array) => a.length === b.length && a.every((v, i) => v === b[i]);

test("flite: the agent's pronunciation_dictionary is said, in CMU ARPAbet or IPA, whatever the word's case", async () => {
  const tts = new FliteTts();
  try {
    // Two made-up words given the same phones, one in ARPAbet, one in IPA: Flite says them identically.
    const pronunciations = [
      { word: 'Zorblax', alphabet: 'cmu', phoneme: 'T AH0 M EY1 T OW0' },
      { word: 'quimby', alphabet: 'ipa', phoneme: 'təˈmeɪtoʊ' },
    ];
    const cmu = await pcmOf(tts, 'zorblax', { pronunciations });
    const ipa = await pcmOf(tts, 'Quimby', { pronunciations });
    assert.ok(same(cmu, ipa), 'the same phones, the same audio');
    // Without the dictionary, Flite guesses each word from its letters: two different sounds.
    assert.ok(!same(await pcmOf(tts, 'zorblax'), await pcmOf(tts, 'quimby')));
    assert.ok(!same(await pcmOf(tts, 'zorblax'), cmu));
    // The dictionary lives for its synthesis only: the next one without it is Flite's own guess again.
    assert.ok(same(await pcmOf(tts, 'quimby'), await pcmOf(tts, 'quimby')));
    assert.equal(fs.readdirSync(fliteDirs().map((d) => path.join(TMP, d))[0]!).length, 0, 'no lexicon file left behind');
  } finally {
    await tts.close();
  }
});

test("flite: the agent's voice_speed stretches the phones (2 is about half as long, 0.5 about twice)", async () => {
  const tts = new FliteTts();
  try {
    const text = 'Thank you for calling, how can I help you today?';
    for (const voiceId of ['flite-kal16', 'flite-slt']) {
      const normal = (await pcmOf(tts, text, { voiceId })).length;
      const fast = (await pcmOf(tts, text, { voiceId, speed: 2 })).length / normal;
      const slow = (await pcmOf(tts, text, { voiceId, speed: 0.5 })).length / normal;
      assert.ok(fast > 0.4 && fast < 0.65, `${voiceId} at 2: ${fast.toFixed(2)} of the length`);
      assert.ok(slow > 1.6 && slow < 2.3, `${voiceId} at 0.5: ${slow.toFixed(2)} of the length`);
    }
  } finally {
    await tts.close();
  }
});
