// The call recorder on its own: the WAV's layout and timeline, its length cap, and memory that
// stays bounded when audio comes faster than the disk takes it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { CallRecorder } from '../../src/media/call-recorder.ts';
import { wavLayout } from '../../src/media/codec/wav.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-recorder-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const RATE = 16_000;
let calls = 0;
const recorder = () => new CallRecorder(dir, `call_rec${++calls}`);

/** The WAV's stereo samples: [left, right] per frame. */
function readStereo(file: string): { left: Int16Array; right: Int16Array } {
  const buf = fs.readFileSync(file);
  const layout = wavLayout(buf, buf.length);
  assert.deepEqual([layout.channels, layout.sampleRate], [2, RATE]);
  const frames = layout.dataBytes / 4;
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = buf.readInt16LE(layout.dataOffset + i * 4);
    right[i] = buf.readInt16LE(layout.dataOffset + i * 4 + 2);
  }
  return { left, right };
}

const constant = (samples: number, value: number) => new Int16Array(samples).fill(value);

describe('call recorder', () => {
  it('places the user on the left as received and each agent reply at its time on the right', async () => {
    const r = recorder();
    r.user(constant(RATE, 100)); // 1 s
    r.agent(constant(RATE / 2, 200), 1_500); // 0.5 s at 1.5 s
    r.agent(constant(RATE / 2, 300)); // follows it
    r.agent(constant(RATE / 4, 400), 5_000); // 0.25 s at 5 s
    const file = await r.finish(4_500);
    const { left, right } = readStereo(file!);
    assert.equal(left.length, RATE * 5.25, 'as long as the last agent audio');
    assert.deepEqual([left[0], left[RATE - 1], left[RATE]], [100, 100, 0]);
    assert.deepEqual([right[RATE * 1.5 - 1], right[RATE * 1.5], right[RATE * 2], right[RATE * 2.5 - 1], right[RATE * 2.5]], [0, 200, 300, 300, 0]);
    assert.deepEqual([right[RATE * 5 - 1], right[RATE * 5], right.at(-1)], [0, 400, 400]);
    assert.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')).length, 0, 'the temporary files are gone');
  });

  it('is never longer than the call\'s duration + 1 s, whatever the tracks hold', async () => {
    const r = recorder();
    r.user(constant(RATE * 10, 100));
    r.agent(constant(RATE * 3, 200), 8_000);
    const { left } = readStereo((await r.finish(2_000))!);
    assert.equal(left.length, RATE * 3);
  });

  it('bounds its memory when audio comes faster than the disk takes it: chunks are dropped, not queued, and the timeline holds', async () => {
    const r = recorder();
    const frame = constant(320, 1_000);
    const before = process.memoryUsage().arrayBuffers;
    // 20 minutes of audio handed over at once: the disk cannot have taken any of it yet.
    for (let i = 0; i < 20 * 60 * 50; i++) r.user(frame);
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.ok(grown < 4 * 1_048_576, `held ${(grown / 1_048_576).toFixed(1)} MB for 20 min of audio waiting for the disk`);
    const { left } = readStereo((await r.finish(20 * 60_000))!);
    assert.equal(left.length, RATE * 20 * 60, 'the timeline keeps its length');
    assert.equal(left[0], 1_000, 'what fit in the queue is written');
    assert.equal(left[RATE * 60], 0, 'what did not is silence in its place');
  });
});
