// The browser bench (bench/browser.ts, bench/speaker.ts) times a reply by its onset: the first
// sample above ONSET_LEVEL after 200 ms at or below it. The agent's "Okay." in Flite opens with
// breath-level sound whose peaks reached the bench's first threshold (1e-3), so the onset fell
// inside the breath on the WebSocket's PCM and at the word on WebRTC's Opus: the onset must be the
// word's, on the exact PCM and on a copy whose low-level samples are changed as a codec changes them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ONSET_LEVEL, onsetsOf } from '../../bench/speaker.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';

const RATE = 16_000;

async function okay(): Promise<Int16Array> {
  const tts = new FliteTts();
  try {
    const parts: Int16Array[] = [];
    for await (const chunk of tts.synthesize('Okay.', { voiceId: 'flite-kal16' })) parts.push(chunk);
    const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      samples.set(part, at);
      at += part.length;
    }
    return samples;
  } finally {
    await tts.close();
  }
}

/** Where the word starts: the first 20 ms frame with an RMS above 100 (the breath stays near 10). */
function wordStart(samples: Int16Array): number {
  const frame = RATE / 50;
  for (let at = 0; at + frame <= samples.length; at += frame) {
    let sum = 0;
    for (let i = at; i < at + frame; i++) sum += samples[i]! ** 2;
    if (Math.sqrt(sum / frame) > 100) return at;
  }
  throw new Error('no word');
}

test("a reply's onset is its word, not the breath before it, on the exact PCM and on a smoothed copy", async () => {
  const clip = await okay();
  const lead = new Int16Array(RATE); // a second of silence, as between replies
  const reply = new Int16Array(lead.length + clip.length);
  reply.set(clip, lead.length);
  const word = lead.length + wordStart(clip);
  assert.ok(word - lead.length >= RATE * 0.1, `the clip opens with breath before its word (word at ${((word - lead.length) / RATE) * 1000} ms)`);
  // A codec's version: every sample below 64 moved by one step towards zero, none above.
  const smoothed = reply.map((v) => (Math.abs(v) < 64 ? v - Math.sign(v) : v));
  for (const samples of [reply, smoothed]) {
    const [onset] = onsetsOf(samples, ONSET_LEVEL, RATE * 0.2);
    assert.ok(onset !== undefined && onset >= word - RATE * 0.005 && onset <= word + RATE * 0.02, `onset at ${onset}, the word at ${word}`);
  }
});

test('onsets: one per sound after the quiet span, none inside a sound or after a shorter pause', () => {
  const samples = new Int16Array(RATE * 2);
  const level = Math.ceil(ONSET_LEVEL * 32768) + 1;
  for (const [from, to] of [[1000, 2000], [2500, 3000], [8000, 9000]] as const) samples.fill(level, from, to);
  assert.deepEqual(onsetsOf(samples, ONSET_LEVEL, RATE * 0.2), [1000, 8000]);
  assert.deepEqual(onsetsOf(samples, ONSET_LEVEL, 100), [1000, 2500, 8000]);
});
