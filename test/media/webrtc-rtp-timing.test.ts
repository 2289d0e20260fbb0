// The agent's RTP timing over WebRTC (issue 23, the client-seen latency): the server sends audio only
// while the agent speaks, and the first packet after a pause must say so, with the marker bit and a
// timestamp moved on by the pause (RFC 3550 5.1, RFC 3551 4.1). Timestamps that stood still across
// the pause made each reply's first packet look seconds late to the caller's jitter buffer.
// The stamping is checked on its own with an injected clock, then on the wire: the Node client
// joins over real UDP on loopback and reads the headers the server sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import type { ReceivedRtp } from '../../src/client/webrtc-socket.ts';
import { CATCH_UP_MS, RECEIVER_HISTORY_MS, RtpSendClock, SPURT_GAP_MS } from '../../src/media/webrtc/rtp-send-clock.ts';
import { concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const FRAME_TICKS = 960;

describe('RTP timestamps and marker bits of the agent\'s stream', () => {
  it('a spurt runs 960 ticks a packet; after a pause the marker is set and the timestamp has moved on by the pause', () => {
    const clock = new RtpSendClock(48_000, 20, 1_000);
    // A reply: two packets at once (the pacer's lead), then one per 20 ms.
    assert.deepEqual(clock.stamp(10_000, true), { timestamp: 1_000, marker: true });
    assert.deepEqual(clock.stamp(10_000, false), { timestamp: 1_960, marker: false });
    for (let i = 1; i <= 20; i++) assert.deepEqual(clock.stamp(10_000 + 20 * i, false), { timestamp: 1_000 + (i + 1) * FRAME_TICKS, marker: false });
    // Three seconds later the next reply: stamped by the clock, not where the sequence left off.
    assert.deepEqual(clock.stamp(13_000, true), { timestamp: 1_000 + 3_000 * 48, marker: true });
    assert.deepEqual(clock.stamp(13_000, false), { timestamp: 1_000 + 3_000 * 48 + FRAME_TICKS, marker: false });
  });

  it('with the pacer\'s lead, a later spurt is stamped that lead on from the clock, as early for its timestamp as the frames before it', () => {
    const clock = new RtpSendClock(48_000, 20, 0, 40);
    // The first spurt: frames 0 and 1 at once, then each 40 ms ahead of its place (sent at 20k - 40 ms).
    clock.stamp(0, true);
    clock.stamp(0, false);
    for (let k = 2; k < 10; k++) clock.stamp(20 * k - 40, false);
    // Sent at 2 000 ms: stamped as if sent 40 ms ahead (2 040 ms on the first packet's clock).
    assert.deepEqual(clock.stamp(2_000, true), { timestamp: 2_040 * 48, marker: true });
  });

  it('after a pause longer than the receiver\'s arrival history, the timestamp moves on by up to the catch-up less than the pause', () => {
    const clock = new RtpSendClock(48_000, 20, 0, 0, 250);
    clock.stamp(0, true);
    clock.stamp(20, false); // the spurt's last packet: timestamp 960
    // Three seconds on: 250 ms of the pause are left out, so the packet reads as 250 ms late.
    assert.deepEqual(clock.stamp(3_000, true), { timestamp: (3_000 - 250) * 48, marker: true });
    assert.deepEqual(clock.stamp(3_020, false), { timestamp: (3_020 - 250) * 48, marker: false });
    // Each long pause is measured from the spurt before it: another 250 ms left out, not the same ones again.
    assert.deepEqual(clock.stamp(6_000, true), { timestamp: (6_000 - 500) * 48, marker: true });
  });

  it('a shorter pause keeps the spurts the receiver\'s history apart, and one shorter than the history moves on by all of it', () => {
    const clock = new RtpSendClock(48_000, 20, 0, 0, 250);
    clock.stamp(0, true); // timestamp 0, the spurt's only packet
    // 2 100 ms on: only 80 ms left out, so the last packet before the pause (at 0) is 2 020 ms behind, out of the history.
    const { timestamp } = clock.stamp(2_100, true);
    assert.equal(timestamp, 2_020 * 48);
    assert.ok(timestamp / 48 > RECEIVER_HISTORY_MS);
    // 1 500 ms after that packet: moved on by the whole pause.
    assert.deepEqual(clock.stamp(3_600, true), { timestamp: (3_600 - 80) * 48, marker: true });
  });

  it('a spurt right after the last (a barge-in, the pacer ahead of the clock) never goes back in time', () => {
    const clock = new RtpSendClock(48_000, 20, 0);
    clock.stamp(0, true);
    clock.stamp(0, false);
    clock.stamp(0, false); // 60 ms sent at 0 ms
    assert.deepEqual(clock.stamp(10, true), { timestamp: 3 * FRAME_TICKS, marker: true });
  });

  it('a pause the sender did not announce (a backchannel after silence) is a spurt too; a short stall is not', () => {
    const clock = new RtpSendClock(48_000, 20, 0);
    clock.stamp(0, true);
    assert.deepEqual(clock.stamp(20 + SPURT_GAP_MS / 2, false), { timestamp: FRAME_TICKS, marker: false });
    const at = 20 + SPURT_GAP_MS / 2 + SPURT_GAP_MS;
    assert.deepEqual(clock.stamp(at, false), { timestamp: at * 48, marker: true });
  });

  it('timestamps wrap at 2^32', () => {
    const start = 2 ** 32 - FRAME_TICKS;
    const clock = new RtpSendClock(48_000, 20, start);
    clock.stamp(0, true);
    assert.equal(clock.stamp(20, false).timestamp, 0);
    assert.equal(clock.stamp(1_000, true).timestamp, (start + 48_000) % 2 ** 32);
  });
});

/** Runs of packets as the marker bit opens them. */
function markedRuns(packets: ReceivedRtp[]): ReceivedRtp[][] {
  const runs: ReceivedRtp[][] = [];
  for (const p of packets) {
    if (p.marker || runs.length === 0) runs.push([p]);
    else runs.at(-1)!.push(p);
  }
  return runs;
}

/**
 * A WebRTC call over real UDP: the greeting, the caller's tone after `waitMs` of silence, the answer.
 * The agent's packets as received, split at the pause between the two replies, and the drift: how far
 * arrival less timestamp (ms) moved from the greeting to the answer. Each packet's arrival less its
 * timestamp is its sending offset plus its delay; the least of each reply is its least delayed
 * packet's (client and server share this process's loop, which may stall a packet).
 */
async function greetingThenAnswer(waitMs: number) {
  const s = await startMediaServer('sqlite', { providers: fakeProviders(['hi there']), env: { RTC_BIND_ADDRESS: '127.0.0.1', RTC_ICE_TCP: 'false' } });
  try {
    const flow = { start_node_id: 'hello', nodes: [{ id: 'hello', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there, how can I help?' } }] };
    const created = await s.api('POST', '/v2/create-web-call', { agent_id: await s.flowAgent(flow) });
    const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token, transport: 'webrtc', iceAddress: '127.0.0.1', timeoutMs: 15_000 });
    await client.waitFor('agent_stop_talking', 10_000);
    await client.play(concat(silence(waitMs), tone(600), silence(700)));
    await client.waitFor(() => client.events.filter((e) => e.type === 'agent_stop_talking').length >= 2, 10_000);
    await client.hangup();
    const packets = client.agentRtp;
    const answerAt = packets.findIndex((p, i) => i > 0 && p.atMs - packets[i - 1]!.atMs > 500);
    assert.ok(answerAt > 0, 'a pause on the wire between the greeting and the answer');
    const [greeting, answer] = [packets.slice(0, answerAt), packets.slice(answerAt)];
    const unwrap = (ts: number) => ((ts - packets[0]!.timestamp + 2 ** 32) % 2 ** 32) / 48;
    const offset = (run: ReceivedRtp[]) => Math.min(...run.map((p) => p.atMs - unwrap(p.timestamp)));
    return {
      packets,
      greeting,
      answer,
      pauseMs: answer[0]!.atMs - greeting.at(-1)!.atMs,
      drift: offset(answer) - offset(greeting),
      /** Ms of timestamps from the greeting's last packet to the answer's first. */
      timestampGapMs: unwrap(answer[0]!.timestamp) - unwrap(greeting.at(-1)!.timestamp),
    };
  } finally {
    await s.close();
  }
}

describe('the agent\'s RTP on the wire', () => {
  it('each reply starts with the marker bit and a timestamp that follows the wall clock across the pause', { timeout: 40_000 }, async () => {
    // The greeting, then the caller speaks, then the answer: two talk spurts with a pause between.
    const { packets, answer, pauseMs, drift } = await greetingThenAnswer(300);
    assert.ok(packets[0]?.marker, 'the first packet opens a talk spurt');
    // Within a spurt, one 20 ms frame a packet; a new spurt never goes back in time. (A stall of
    // the shared event loop over 200 ms may open a spurt inside a reply: it is one on the wire too.)
    const runs = markedRuns(packets);
    for (const [r, run] of runs.entries()) {
      for (let i = 1; i < run.length; i++) {
        assert.equal((run[i]!.sequence - run[i - 1]!.sequence + 65_536) % 65_536, 1);
        assert.equal((run[i]!.timestamp - run[i - 1]!.timestamp + 2 ** 32) % 2 ** 32, FRAME_TICKS, 'one 20 ms frame a packet within a spurt');
      }
      const before = runs[r - 1]?.at(-1);
      if (before) assert.ok(((run[0]!.timestamp - before.timestamp - FRAME_TICKS) | 0) >= 0, 'a spurt starts at or after the end of the one before');
    }
    assert.ok(answer[0]!.marker, 'the answer\'s first packet carries the marker bit');
    // The pause on the wire is the pause in the timestamps. Without the clock the drift is the whole
    // pause (about a second and a half); a loaded machine's stalls (a reply's pacing behind, its
    // packets read late) move it by up to a few hundred ms.
    assert.ok(Math.abs(drift) < Math.min(300, pauseMs / 2), `arrival less timestamp moved by ${Math.round(drift)} ms from the greeting to the answer (a ${Math.round(pauseMs)} ms pause): the timestamps did not follow the pause`);
  });

  it('a reply after a long pause reads as late by the catch-up: its packets arrive that much later for their timestamps than the greeting\'s', { timeout: 40_000 }, async () => {
    // The caller waits 2.5 s before speaking: the answer comes more than RECEIVER_HISTORY_MS + CATCH_UP_MS after the greeting.
    const { answer, pauseMs, drift, timestampGapMs } = await greetingThenAnswer(2_500);
    assert.ok(answer[0]!.marker, 'the answer starts a talk spurt after a pause');
    assert.ok(pauseMs > RECEIVER_HISTORY_MS + CATCH_UP_MS + 100, `a ${Math.round(pauseMs)} ms pause`);
    // Without the catch-up the drift is about 0 (the previous test); a loaded machine's stalls move it by up to a few hundred ms.
    assert.ok(drift > CATCH_UP_MS / 2 && drift < CATCH_UP_MS + 300, `arrival less timestamp moved by ${Math.round(drift)} ms across a ${Math.round(pauseMs)} ms pause, not by about ${CATCH_UP_MS} ms`);
    assert.ok(timestampGapMs > RECEIVER_HISTORY_MS, `the answer's timestamps are ${Math.round(timestampGapMs)} ms on from the greeting's last: beyond the receiver's history`);
  });
});
