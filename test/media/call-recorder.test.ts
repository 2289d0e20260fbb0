// The call recorder and the recording stores: the WAV's layout and timeline, its length cap,
// memory that stays bounded when audio comes faster than the store takes it, and the store's own
// operations (range reads, recovery of a dead server's tracks, silencing, deletion), on files
// (SQLite) and on chunks in the database (PostgreSQL).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallRecorder } from '../../src/media/call-recorder.ts';
import { wavLayout } from '../../src/lib/wav.ts';
import { DatabaseRecordingStore } from '../../src/services/database-recording-store.ts';
import { FileRecordingStore } from '../../src/services/file-recording-store.ts';
import type { RecordingStore } from '../../src/services/recording-store.ts';
import { RecordingRepository } from '../../src/storage/recording.repository.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

const RATE = 16_000;
let calls = 0;

async function readAll(store: RecordingStore, callId: string, recordingPath: string, start = 0, end?: number): Promise<Buffer> {
  const size = await store.size(callId, recordingPath);
  assert.notEqual(size, null, 'the recording is stored');
  const parts: Buffer[] = [];
  for await (const part of store.read(callId, recordingPath, start, end ?? size! - 1)) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** The WAV's stereo samples: [left, right] per frame. */
function stereo(buf: Buffer): { left: Int16Array; right: Int16Array } {
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
const pcm = (samples: Int16Array) => Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);

for (const kind of STORES) {
  describe(`call recorder and recording store on ${kind.name}`, { skip: kind.skip }, () => {
    let testStore: TestStore;
    let store: RecordingStore;
    before(async () => {
      testStore = await openTestStore(kind.name);
      store = kind.name === 'postgres' ? new DatabaseRecordingStore(new RecordingRepository(testStore.store)) : new FileRecordingStore(testStore.dataDir);
    });
    after(() => testStore.close());

    const recorder = () => {
      const callId = `call_rec${++calls}`;
      return { callId, r: new CallRecorder(store.open(callId)) };
    };
    const readStereo = async (callId: string, recordingPath: string | null) => stereo(await readAll(store, callId, recordingPath!));

    it('places the user on the left and the agent on the right, each at its time on the timeline', async () => {
      const { callId, r } = recorder();
      r.user(constant(RATE, 100), 0); // 1 s
      r.user(constant(RATE / 2, 150), 3_000); // after a gap the caller never sent
      r.agent(constant(RATE / 2, 200), 1_500); // 0.5 s at 1.5 s
      r.agent(constant(RATE / 2, 300)); // follows it
      r.agent(constant(RATE / 4, 400), 5_000); // 0.25 s at 5 s
      const recordingPath = await r.finish(4_500);
      assert.equal(recordingPath, `recordings/${callId}.wav`);
      const { left, right } = await readStereo(callId, recordingPath);
      assert.equal(left.length, RATE * 5.25, 'as long as the last agent audio');
      assert.deepEqual([left[0], left[RATE - 1], left[RATE], left[RATE * 3 - 1], left[RATE * 3], left[RATE * 3.5 - 1], left[RATE * 3.5]], [100, 100, 0, 0, 150, 150, 0]);
      assert.deepEqual([right[RATE * 1.5 - 1], right[RATE * 1.5], right[RATE * 2], right[RATE * 2.5 - 1], right[RATE * 2.5]], [0, 200, 300, 300, 0]);
      assert.deepEqual([right[RATE * 5 - 1], right[RATE * 5], right.at(-1)], [0, 400, 400]);
      assert.equal(await store.recover(callId), recordingPath, 'finished: recovery finds the recording, nothing left to assemble');
    });

    it('is never longer than the call\'s duration + 1 s, whatever the tracks hold', async () => {
      const { callId, r } = recorder();
      r.user(constant(RATE * 10, 100), 0);
      r.agent(constant(RATE * 3, 200), 8_000);
      const { left } = await readStereo(callId, await r.finish(2_000));
      assert.equal(left.length, RATE * 3);
    });

    it('bounds its memory when audio comes faster than the store takes it: chunks are dropped, not queued, and the timeline holds', async () => {
      const { callId, r } = recorder();
      const frame = constant(320, 1_000);
      const before = process.memoryUsage().arrayBuffers;
      // 20 minutes of audio handed over at once: the store cannot have taken any of it yet.
      for (let i = 0; i < 20 * 60 * 50; i++) r.user(frame, i * 20);
      const grown = process.memoryUsage().arrayBuffers - before;
      assert.ok(grown < 4 * 1_048_576, `held ${(grown / 1_048_576).toFixed(1)} MB for 20 min of audio waiting for the store`);
      const { left } = await readStereo(callId, await r.finish(20 * 60_000));
      assert.equal(left.length, RATE * 20 * 60, 'the timeline keeps its length');
      assert.equal(left[0], 1_000, 'what fit in the queue is written');
      assert.equal(left[RATE * 60], 0, 'what did not is silence in its place');
    });

    it('reads any byte range of the recording, across its stored pieces', async () => {
      const { callId, r } = recorder();
      const ramp = new Int16Array(RATE * 12);
      for (let i = 0; i < ramp.length; i++) ramp[i] = (i % 30_000) - 15_000;
      r.user(ramp, 0);
      const recordingPath = (await r.finish(12_000))!;
      const whole = await readAll(store, callId, recordingPath);
      assert.equal(whole.length, 44 + RATE * 12 * 4);
      for (const [start, end] of [[0, 43], [44, 47], [262_100, 262_200], [300_000, 700_000], [whole.length - 5, whole.length - 1]] as const) {
        assert.deepEqual(await readAll(store, callId, recordingPath, start, end), whole.subarray(start, end + 1), `bytes ${start}-${end}`);
      }
    });

    it('recovers the recording of a call whose server stopped: the tracks stored so far, as long as the longest', async () => {
      const callId = `call_rec${++calls}`;
      const writer = store.open(callId);
      await writer.writeChunk(0, 0, pcm(constant(RATE * 2, 100)));
      await writer.writeChunk(1, RATE * 2, pcm(constant(RATE, 200))); // the agent at 1 s, for 1 s
      await writer.writeChunk(0, RATE * 2 * 2, pcm(constant(RATE * 2, 300)));
      // The server dies here: no finish. Another one (or the same after a restart) recovers.
      const recordingPath = await store.recover(callId);
      assert.equal(recordingPath, `recordings/${callId}.wav`);
      const { left, right } = await readStereo(callId, recordingPath);
      assert.equal(left.length, RATE * 4);
      assert.deepEqual([left[0], left[RATE * 2 - 1], left[RATE * 2], left.at(-1)], [100, 100, 300, 300]);
      assert.deepEqual([right[RATE - 1], right[RATE], right[RATE * 2 - 1], right[RATE * 2]], [0, 200, 200, 0]);
      assert.equal(await store.recover(callId), recordingPath, 'recovering again finds the same recording');
      assert.equal(await store.recover(`call_rec${++calls}`), null, 'nothing stored: no recording');
    });

    it('silences spans on both channels in place and deletes everything of a call', async () => {
      const { callId, r } = recorder();
      r.user(constant(RATE * 6, 100), 0);
      r.agent(constant(RATE * 6, 200), 0);
      const recordingPath = (await r.finish(6_000))!;
      await store.silence(callId, recordingPath, [{ startMs: 1_000, endMs: 2_000 }, { startMs: 4_500, endMs: 9_000 }]);
      const { left, right } = await readStereo(callId, recordingPath);
      assert.equal(left.length, RATE * 6, 'the length stays');
      assert.deepEqual([left[RATE - 1], left[RATE], left[RATE * 2 - 1], left[RATE * 2]], [100, 0, 0, 100]);
      assert.deepEqual([right[RATE - 1], right[RATE], right[RATE * 2 - 1], right[RATE * 2]], [200, 0, 0, 200]);
      assert.deepEqual([left[RATE * 4.5 - 1], left[RATE * 4.5], left.at(-1), right.at(-1)], [100, 0, 0, 0]);

      const writer = store.open(`${callId}x`);
      await writer.writeChunk(0, 0, pcm(constant(RATE, 1)));
      await store.delete(callId, recordingPath);
      await store.delete(`${callId}x`, null);
      assert.equal(await store.size(callId, recordingPath), null);
      assert.equal(await store.recover(`${callId}x`), null, 'the unfinished tracks are deleted too');
    });
  });
}
