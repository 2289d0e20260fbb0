// The real-speech benchmark's headline decodes each recording as its own call's first utterance
// (bench/real-speech.ts, throughCalls), as a call hears one caller, not after other speakers in
// one stream (throughStream): what a call does with the same audio.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { throughCalls, throughStream, type Item } from '../../bench/real-speech.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { probeLibrary } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttExpectation } from '../../src/providers/stt.ts';
import { encodeWav } from '../../src/lib/wav.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';

const LIBRARY = { skip: !hasPocketsphinx() ? NO_POCKETSPHINX : probeLibrary().ok ? false : 'libpocketsphinx cannot be called in-process here' };

test('real-speech bench: throughCalls decodes each item as a call\'s first utterance, throughStream on the mean learnt from the items before it', LIBRARY, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'real-speech-calls-'));
  const before = process.env['REAL_SPEECH_DIR'];
  const tts = new FliteTts();
  try {
    const said = ['i need some help with my bill', 'i want to buy a new phone'];
    const items: Item[] = [];
    for (const [i, text] of said.entries()) {
      const parts: Int16Array[] = [];
      for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
      const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
      parts.reduce((o, p) => (samples.set(p, o), o + p.length), 0);
      writeFileSync(join(dir, `${i}.wav`), encodeWav({ samples, sampleRate: 16000, channels: 1 }));
      items.push({ file: `${i}.wav`, text, rate: 16000, kind: 'sentence' });
    }
    process.env['REAL_SPEECH_DIR'] = dir;
    const node: SttExpectation = { closed: true, phrases: ['sales', 'buy', 'purchase', 'support', 'help', 'billing'], values: [] };
    // Without the second decode, what a first utterance is heard as depends only on the mean it starts from.
    const calls = (await throughCalls(items, node, [], { redecodeFirstUtterance: false })).texts;
    const alone = (await throughCalls(items.slice(1), node, [], { redecodeFirstUtterance: false })).texts;
    assert.equal(calls[1], alone[0], 'the second call hears its caller as if it were the only one');
    assert.doesNotMatch(calls[1]!, /\bbuy\b/, `as a call's first words, on the model's mean, "to buy" is missed: ${calls[1]}`);
    const stream = (await throughStream(items, 'directed', node)).texts;
    assert.match(stream[1]!, /\bbuy\b/, `after the first caller in one stream it is heard: ${stream[1]}`);
  } finally {
    if (before === undefined) delete process.env['REAL_SPEECH_DIR'];
    else process.env['REAL_SPEECH_DIR'] = before;
    await tts.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
