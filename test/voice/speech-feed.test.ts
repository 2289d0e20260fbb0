// What reaches the recogniser of an utterance (src/voice/stages/speech-feed.ts): speech and its
// pre-roll, and of a pause only the first TRAILING_SILENCE_MS; the rest is held back, written if
// the caller speaks again within the turn and dropped when the turn ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import type { SttOpenOptions, SttProvider, SttStream } from '../../src/providers/stt.ts';
import { FlowEngine } from '../../src/voice/index.ts';
import { SpeechFeed, TRAILING_SILENCE_MS } from '../../src/voice/stages/speech-feed.ts';
import { TestClock, feed, makePipeline, silence, tone, concat } from './harness.ts';

const FRAME = 320; // 20 ms at 16 kHz

/** A recogniser stream that keeps what it was given, each frame marked by its first sample. */
function recording(pendingMs?: number) {
  const written: number[] = [];
  const stream: SttStream = {
    write: (pcm) => void written.push(pcm[0]!),
    finalize: async () => ({ text: '' }),
    close: async () => {},
    ...(pendingMs === undefined ? {} : { pendingMs: () => pendingMs }),
  };
  return { stream, written };
}

const frame = (mark: number): Int16Array => new Int16Array(FRAME).fill(mark);

test('a pause: its first 300 ms are written, the rest held and written in order when the caller speaks again', () => {
  const { stream, written } = recording(40);
  const f = new SpeechFeed(stream);
  f.write(frame(1));
  for (let i = 1; i <= 25; i++) f.write(frame(100 + i), i * 20); // a 500 ms pause
  assert.equal(written.length, 1 + TRAILING_SILENCE_MS / 20);
  assert.equal(f.pendingMs(), 40 + (25 - TRAILING_SILENCE_MS / 20) * 20, 'the held pause counts as not decoded');
  f.write(frame(2), 0);
  assert.deepEqual(written, [1, ...Array.from({ length: 25 }, (_, i) => 101 + i), 2], 'the whole pause, in order, before the speech');
  assert.equal(f.pendingMs(), 40);
});

test('the end of the turn drops the pause held back; a recogniser without pendingMs stays without', async () => {
  const { stream, written } = recording();
  const f = new SpeechFeed(stream);
  f.write(frame(1));
  for (let i = 1; i <= 40; i++) f.write(frame(100 + i), i * 20);
  await f.finalize();
  f.write(frame(3));
  assert.deepEqual(written, [1, ...Array.from({ length: TRAILING_SILENCE_MS / 20 }, (_, i) => 101 + i), 3]);
  assert.equal(f.pendingMs(), undefined);
});

/** A recogniser counting the audio its streams were given, ms. */
class CountingStt implements SttProvider {
  readonly id = 'counting';
  writtenMs = 0;
  languages(): readonly string[] {
    return ['en-US'];
  }
  async openStream(_options: SttOpenOptions = {}): Promise<SttStream> {
    return {
      write: (pcm) => void (this.writtenMs += pcm.length / 16),
      finalize: async () => ({ text: 'hello' }),
      close: async () => {},
    };
  }
}

test('through the pipeline: the end of turn\'s silence beyond 300 ms never reaches the recogniser; a pause inside the turn does', async () => {
  const flow = { start_node_id: 'a', nodes: [{ id: 'a', type: 'conversation', instruction: { type: 'static_text', text: '' }, edges: [] }] };
  const run = async (audio: Int16Array): Promise<number> => {
    const clock = new TestClock();
    const stt = new CountingStt();
    const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 1 }), vad: new EnergyVad(), engine: new FlowEngine({ flow } as never), endpointingMs: 800 }, clock);
    await p.start();
    await feed(p, clock, audio);
    await p.close();
    return stt.writtenMs;
  };
  // 200 ms pre-roll + 1000 ms speech + 300 ms of the 800 ms end of turn (before: all 800 ms).
  const ended = await run(concat(silence(1000), tone(1000), silence(2000)));
  assert.ok(ended >= 1400 && ended <= 1560, `written ${ended} ms`);
  // A 600 ms pause inside the turn is written whole once the caller speaks again.
  const paused = await run(concat(silence(1000), tone(600), silence(600), tone(400), silence(2000)));
  assert.ok(paused >= 200 + 600 + 600 + 400 + 260 && paused <= 200 + 600 + 600 + 400 + 360, `written ${paused} ms`);
});
