// The inbound limits of a call's connection (docs/media-protocol.md, "Limits"): on a manual
// clock, real-time clients (with jitter, stalls and catch-up bursts) lose nothing, audio beyond
// real time is dropped, and far beyond it, or floods of messages, cut the client off; then over a
// real socket, with the counters on /metrics and the recording's length.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InboundLimiter } from '../../src/media/codec/inbound-limits.ts';
import { CLOSE } from '../../src/protocol/media.constants.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, fakeProviders, metricValue, rawJoin, silence, startMediaServer, tone } from './helpers.ts';

const FRAME = 320; // 20 ms at 16 kHz

/** A limiter on a clock the test moves. */
function limiter() {
  let now = 1_000;
  const l = new InboundLimiter(() => now);
  return {
    l,
    at(ms: number) {
      now = Math.max(now, ms);
    },
    get now() {
      return now;
    },
  };
}

/** Sends 20 ms frames produced in real time for `seconds`, each arriving at `arrival(i)` ms; totals. */
function realTime(seconds: number, arrival: (i: number, produced: number) => number) {
  const t = limiter();
  const start = t.now;
  let admitted = 0;
  let dropped = 0;
  const frames = (seconds * 1000) / 20;
  const arrivals = Array.from({ length: frames }, (_, i) => arrival(i, start + (i + 1) * 20));
  for (let i = 0; i < frames; i++) {
    t.at(arrivals[i]!);
    const v = t.l.audio(FRAME);
    assert.notEqual(v.kind, 'flood', `frame ${i} counted as a flood`);
    if (v.kind === 'admit') {
      admitted += v.samples;
      dropped += v.droppedSamples;
    }
  }
  return { admitted, dropped };
}

describe('inbound limits: real-time clients are never throttled', () => {
  it('admits an hour of 20 ms frames with up to 40 ms of random jitter', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const r = realTime(3_600, (_i, produced) => produced + random() * 40);
    assert.equal(r.dropped, 0);
  });

  it('admits the catch-up after stalls: 200 ms every second, and 900 ms every 5 s, for ten minutes', () => {
    // Frames produced during a stall arrive together when it ends (a stalled event loop or network).
    const stalls = (i: number, produced: number, everyMs: number, stallMs: number) => {
      const phase = (produced - 1_000) % everyMs;
      return phase < stallMs ? produced - phase + stallMs : produced;
    };
    assert.equal(realTime(600, (i, p) => stalls(i, p, 1_000, 200)).dropped, 0);
    assert.equal(realTime(600, (i, p) => stalls(i, p, 5_000, 900)).dropped, 0);
  });

  it('admits the Node client\'s pacing: 10 frames at once after a long event-loop stall', () => {
    const t = limiter();
    let dropped = 0;
    for (let s = 0; s < 60; s++) {
      // Each second: a 600 ms stall, then the client sends its 10-frame catch-up and paces on.
      t.at(t.now + 600);
      for (let k = 0; k < 10; k++) {
        const v = t.l.audio(FRAME);
        if (v.kind === 'admit') dropped += v.droppedSamples;
      }
      for (let k = 0; k < 20; k++) {
        t.at(t.now + 20);
        const v = t.l.audio(FRAME);
        if (v.kind === 'admit') dropped += v.droppedSamples;
      }
    }
    assert.equal(dropped, 0);
  });

  it('answers a ping every 100 ms and lets a hangup through', () => {
    const t = limiter();
    for (let i = 0; i < 600; i++) {
      t.at(t.now + 100);
      assert.equal(t.l.text(), 'admit');
    }
  });
});

describe('inbound limits: faster than real time', () => {
  it('1.5x real time for a minute: about a second beyond real time admitted, the rest dropped, not cut off', () => {
    const t = limiter();
    let admitted = 0;
    let dropped = 0;
    for (let i = 0; i < 4_500; i++) {
      t.at(1_000 + (i + 1) * (20 / 1.5));
      const v = t.l.audio(FRAME);
      assert.equal(v.kind, 'admit');
      if (v.kind === 'admit') {
        admitted += v.samples;
        dropped += v.droppedSamples;
      }
    }
    const seconds = (t.now - 1_000) / 1000;
    assert.ok(admitted <= (seconds + 1) * 16_000, `admitted ${admitted / 16_000} s in ${seconds} s`);
    assert.ok(admitted >= seconds * 16_000, 'real time is always admitted');
    assert.ok(Math.abs(dropped / 16_000 - 29) < 0.1, `dropped ${dropped / 16_000} s`);
  });

  it('3x real time is cut off after about 4 s; 10x within half a second', () => {
    for (const [factor, cutOffS] of [[3, 4], [10, 0.5]] as const) {
      const t = limiter();
      let i = 0;
      for (; i < 100_000; i++) {
        t.at(1_000 + (i + 1) * (20 / factor));
        if (t.l.audio(FRAME).kind === 'flood') break;
      }
      const seconds = (t.now - 1_000) / 1000;
      assert.ok(seconds > cutOffS * 0.9 && seconds < cutOffS * 1.1, `${factor}x cut off after ${seconds} s`);
    }
  });

  it('64 KiB messages back to back: cut off on the second one', () => {
    const t = limiter();
    assert.equal(t.l.audio(32_768).kind, 'admit');
    assert.equal(t.l.audio(32_768).kind, 'flood');
  });

  it('a flood of tiny or empty audio messages is cut off by the message count', () => {
    const t = limiter();
    let verdict;
    let n = 0;
    do verdict = t.l.audio(n++ % 2); // 0 or 1 sample each, all at once
    while (verdict.kind !== 'flood' && n < 10_000);
    assert.equal(verdict.kind, 'flood');
    assert.equal(n, 401, 'after the 400-message flood burst');
  });

  it('messages over 100/s are dropped whole, their audio counted as dropped', () => {
    const t = limiter();
    let droppedMessages = 0;
    for (let i = 0; i < 1_500; i++) {
      t.at(1_000 + i * (1000 / 150)); // 150 messages/s of 2 ms each: real-time audio, too many messages
      const v = t.l.audio(32);
      assert.equal(v.kind, 'admit');
      if (v.kind === 'admit' && v.messageDropped) {
        droppedMessages++;
        assert.deepEqual([v.samples, v.droppedSamples], [0, 32]);
      }
    }
    assert.ok(Math.abs(droppedMessages - 400) < 10, `${droppedMessages} dropped of 1500 over 10 s`);
  });

  it('text: 20 at once are answered, then 10/s; a ping flood is dropped and then cut off', () => {
    const t = limiter();
    const verdicts = Array.from({ length: 30 }, () => t.l.text());
    assert.deepEqual(verdicts.filter((v) => v === 'admit').length, 20);
    assert.deepEqual(verdicts.filter((v) => v === 'drop').length, 10);
    t.at(t.now + 1_000);
    assert.equal(Array.from({ length: 15 }, () => t.l.text()).filter((v) => v === 'admit').length, 10);
    let n = 0;
    while (t.l.text() !== 'flood') n++;
    assert.ok(n < 80, `cut off after ${n} more`);
  });
});

const DROPPED = 'switchboard_media_audio_dropped_seconds_total';
const FLOODS = 'switchboard_media_flood_disconnections_total';

for (const kind of STORES) {
  describe(`inbound limits over a real socket on ${kind.name}`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let agentId: string;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([]) });
      agentId = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] });
    });
    after(() => s.close());
    const token = async () => (await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).json as { call_id: string; access_token: string };

    it('a real-time client that stalls and catches up loses nothing', async () => {
      const droppedBefore = await metricValue(s.baseUrl, DROPPED);
      const client = await s.call(agentId);
      const played = client.play(concat(tone(1_000), silence(1_500)));
      // Block this process's event loop (the server's and the client's): the client then catches up with a burst.
      for (const stallMs of [250, 400]) {
        await new Promise((r) => setTimeout(r, 500));
        const until = performance.now() + stallMs;
        while (performance.now() < until);
      }
      await played;
      const end = await client.hangup();
      assert.equal(end.disconnection_reason, 'user_hangup');
      assert.equal(await metricValue(s.baseUrl, DROPPED), droppedBefore, 'no audio dropped');
    });

    it('1.5x real time: the excess is dropped and counted, the call goes on, and the recording keeps to the call\'s time', async () => {
      const droppedBefore = await metricValue(s.baseUrl, DROPPED);
      const created = await token();
      const c = await rawJoin(s.baseUrl, created.access_token);
      const frame = Buffer.from(tone(20).buffer);
      const start = performance.now();
      let sent = 0;
      while (performance.now() - start < 3_000) {
        c.ws.send(frame);
        sent++;
        // 20 ms of audio every 13.3 ms, on an absolute schedule.
        await new Promise((r) => setTimeout(r, Math.max(0, start + sent * (20 / 1.5) - performance.now())));
      }
      c.ws.send(JSON.stringify({ type: 'hangup' }));
      const code = await c.closed;
      assert.equal(code, CLOSE.normal);
      const dropped = (await metricValue(s.baseUrl, DROPPED)) - droppedBefore;
      const sentSeconds = (sent * 20) / 1000;
      const wallSeconds = (performance.now() - start) / 1000;
      assert.ok(dropped > 0.2 && dropped <= sentSeconds - wallSeconds + 0.1, `dropped ${dropped} s of ${sentSeconds} s sent in ${wallSeconds} s`);
      const call = (await s.api('GET', `/v2/get-call/${created.call_id}`)).json;
      assert.equal(call.disconnection_reason, 'user_hangup');
      const wav = await s.api('GET', `/v2/get-call-recording/${created.call_id}`);
      const recordedMs = ((wav.bytes.length - 44) / 4 / 16_000) * 1000;
      assert.ok(recordedMs <= call.duration_ms + 1_000, `recording of ${recordedMs} ms for a call of ${call.duration_ms} ms`);
    });

    it('a ping flood gets at most the burst answered, then the client is cut off with 4429 and the call ends error_client_flood', async () => {
      const floodsBefore = await metricValue(s.baseUrl, FLOODS);
      const textDroppedBefore = await metricValue(s.baseUrl, 'switchboard_media_messages_dropped_total', { kind: 'text' });
      const created = await token();
      const c = await rawJoin(s.baseUrl, created.access_token);
      for (let i = 0; i < 500 && c.ws.readyState === c.ws.OPEN; i++) c.ws.send(JSON.stringify({ type: 'ping', id: i }));
      assert.equal(await c.closed, CLOSE.tooFast);
      const pongs = c.events.filter((e) => e.type === 'pong').length;
      assert.ok(pongs > 0 && pongs <= 20, `${pongs} pongs for 500 pings`);
      assert.ok(c.events.some((e) => e.type === 'error' && e.code === 'error_client_flood'));
      assert.deepEqual(c.events.filter((e) => e.type === 'call_ended').map((e) => [e.call_status, e.disconnection_reason]), [['error', 'error_client_flood']]);
      const call = (await s.api('GET', `/v2/get-call/${created.call_id}`)).json;
      assert.deepEqual([call.call_status, call.disconnection_reason], ['error', 'error_client_flood']);
      assert.equal(await metricValue(s.baseUrl, FLOODS), floodsBefore + 1);
      assert.ok((await metricValue(s.baseUrl, 'switchboard_media_messages_dropped_total', { kind: 'text' })) > textDroppedBefore);
    });
  });
}
