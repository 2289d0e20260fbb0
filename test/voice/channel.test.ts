import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Channel, ChannelClosedError } from '../../src/voice/channel.ts';
import { TurnDetector } from '../../src/voice/stages/turn.stage.ts';
import { ConversationRecord } from '../../src/voice/conversation-record.ts';
import { toTranscriptWithToolCalls } from '../../src/voice/transcript.ts';

test('channel overflow policies', async () => {
  const old = new Channel<number>({ capacity: 2, overflow: 'drop_oldest' });
  for (const n of [1, 2, 3]) await old.push(n);
  assert.deepEqual([old.tryShift(), old.tryShift(), old.dropped], [2, 3, 1]);
  const nw = new Channel<number>({ capacity: 2, overflow: 'drop_newest' });
  for (const n of [1, 2, 3]) await nw.push(n);
  assert.deepEqual([nw.tryShift(), nw.tryShift(), nw.dropped], [1, 2, 1]);
  const bl = new Channel<number>({ capacity: 1, overflow: 'block' });
  await bl.push(1);
  let admitted = false;
  const p = bl.push(2).then(() => (admitted = true));
  await Promise.resolve();
  assert.equal(admitted, false);
  assert.equal((await bl.next()).value, 1);
  await p;
  assert.equal(admitted, true);
  const q = bl.push(3);
  bl.close();
  bl.close();
  await assert.rejects(q, ChannelClosedError);
  assert.equal((await bl.next()).value, 2, 'queued items drain after close');
  assert.equal((await bl.next()).done, true);
});

test('turn detector: onset after 3 of 4 voiced frames, end after the endpointing silence', () => {
  const d = new TurnDetector({ endpointingMs: 100 });
  const verdicts = '....SSSS.S..SS......'.split('');
  const types: string[] = [];
  verdicts.forEach((v, i) => {
    for (const e of d.push({ pcm: new Int16Array(320), offsetMs: i * 20, speech: v === 'S' })) {
      if (e.type === 'speech_start') types.push(`start@${e.startMs}+${e.preroll.length}`);
      if (e.type === 'speech_end') types.push(`end@${e.endMs}/${e.voicedMs}`);
    }
  });
  assert.deepEqual(types, ['start@80+7', 'end@280/140']);
});

test("a user's utterance is placed among the agent's by when it reached the server, not by its audio timeline", () => {
  // The client stalled earlier and then caught up: its audio timeline runs 200 ms behind the clock.
  const d = new TurnDetector({ endpointingMs: 60 });
  const heard: number[] = [];
  '..SSSS....'.split('').forEach((v, i) => {
    for (const e of d.push({ pcm: new Int16Array(320), offsetMs: i * 20, receivedMs: i * 20 + 200, speech: v === 'S' })) {
      if (e.type === 'speech_start' || e.type === 'speech_end') heard.push(e.heardAtMs);
    }
  });
  assert.deepEqual(heard, [240, 240]);
  const record = new ConversationRecord({ transcript: () => {}, toolCall: () => {}, latency: () => {}, bound: () => {} });
  record.addUtterance({ role: 'agent', text: 'Are you still with me?', startMs: 100, endMs: 150 });
  // Spoken after the reminder began, stamped earlier on the lagging audio timeline.
  record.addUtterance({ role: 'user', text: 'yes', startMs: 40, endMs: 120, heardAtMs: 240 });
  record.addUtterance({ role: 'user', text: 'earlier', startMs: 0, endMs: 20 });
  assert.deepEqual(record.transcript().map((u) => u.text), ['earlier', 'Are you still with me?', 'yes']);
  assert.deepEqual(toTranscriptWithToolCalls(record.transcript(), [])?.map((e) => ('content' in e ? e.content : '')), ['earlier', 'Are you still with me?', 'yes']);
});
