// The media-stream endpoint at its seam: a real WebSocket, Twilio's side played by the fake (its
// real messages, a real-time player echoing marks), the session's side by a sink that records.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { encodeMulaw } from '../../../src/media/codec/mulaw.ts';
import type { EndpointSink } from '../../../src/media/endpoint.ts';
import { MediaStreamEndpoint } from '../../../src/media/twilio/media-stream.endpoint.ts';
import { twilioDialect } from '../../../src/media/twilio/stream-protocol.ts';
import { eventually } from '../helpers.ts';
import { FakeStream } from './fake-twilio.ts';

describe('the media-stream endpoint', () => {
  let wss: WebSocketServer;
  let url: string;
  const endpoints: MediaStreamEndpoint[] = [];
  before(async () => {
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => wss.once('listening', resolve));
    url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    wss.on('connection', (ws) => endpoints.push(new MediaStreamEndpoint(ws, twilioDialect)));
  });
  after(async () => {
    for (const ws of wss.clients) ws.terminate();
    await new Promise((resolve) => wss.close(resolve));
  });

  /** A stream opened by Twilio's side, its endpoint started, not yet attached (the call being admitted). */
  async function started(): Promise<{ stream: FakeStream; endpoint: MediaStreamEndpoint }> {
    const stream = new FakeStream(url, 'AC1', 'CA1', { token: 'x' });
    const before = endpoints.length;
    await stream.open();
    const endpoint = await eventually(() => endpoints[before]);
    const start = await endpoint.started;
    assert.deepEqual(start && { callId: start.callId, accountId: start.accountId, parameters: start.parameters }, { callId: 'CA1', accountId: 'AC1', parameters: { token: 'x' } });
    return { stream, endpoint };
  }

  /** A stream opened by Twilio's side, its endpoint started and attached to a recording sink. */
  async function open(): Promise<{ stream: FakeStream; endpoint: MediaStreamEndpoint; sink: Sink }> {
    const { stream, endpoint } = await started();
    const sink = new Sink();
    endpoint.attach(sink);
    return { stream, endpoint, sink };
  }

  it("hands the caller's μ-law audio to the session at 8 kHz, as it came, and keypad digits", { timeout: 10_000 }, async () => {
    const { stream, sink, endpoint } = await open();
    assert.equal(endpoint.sampleRate, 8000, 'the port runs at the telephone band');
    const tone = Int16Array.from({ length: 1600 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
    await stream.say(tone);
    stream.dtmf('4');
    stream.dtmf('#');
    await eventually(() => sink.digits === '4#');
    // 200 ms at 8 kHz: 1 600 samples, nothing resampled (a resampler to 16 kHz would give about 3 200).
    assert.equal(sink.samples, 1600);
    assert.ok(sink.peak > 6000, `the tone came through (peak ${sink.peak})`);
    const stats = endpoint.mediaStats();
    assert.deepEqual({ transport: stats.transport, codec: stats.codec, sample_rate: stats.sample_rate, packets_in: stats.packets_in, bytes_in: stats.bytes_in, packets_lost: stats.packets_lost }, { transport: 'twilio', codec: 'pcmu', sample_rate: 8000, packets_in: 10, bytes_in: 1600, packets_lost: 0 });
    assert.equal(typeof stats.jitter_ms, 'number');
    stream.stop();
    await eventually(() => sink.ends.includes('hangup'));
  });

  it('holds what the caller says while the call is admitted, the latest second, and hands it over at once when the call runs', { timeout: 10_000 }, async () => {
    const { stream, endpoint } = await started();
    const loud = Int16Array.from({ length: 4_000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
    const quiet = Int16Array.from({ length: 8_000 }, (_, i) => Math.round(500 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
    await stream.say(loud); // 500 ms, then 1 s: 1.5 s before the call runs
    await stream.say(quiet);
    await eventually(() => endpoint.mediaStats().packets_in === 75);
    const sink = new Sink();
    endpoint.attach(sink);
    assert.deepEqual(sink.chunks, [8_000], 'the latest second, in one piece');
    assert.ok(sink.peak < 1_000, `the oldest half second was let go (peak ${sink.peak})`);
    await stream.say(loud.subarray(0, 1_600));
    await eventually(() => sink.samples === 9_600);
    assert.ok(sink.peak > 6_000, 'the audio after it follows as it comes');
    stream.stop();
    await eventually(() => sink.ends.includes('hangup'));
  });

  it("plays the agent's audio as μ-law 8 kHz; the played position comes from Twilio's marks; clear drops the rest", { timeout: 10_000 }, async () => {
    const { stream, endpoint } = await open();
    endpoint.send({ type: 'agent_talking', utteranceId: 'utt_1' });
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000)));
    for (let i = 0; i < 50; i += 1) endpoint.playAudio(frame); // 1 s, sent at once
    assert.equal(endpoint.playedMs(), 0, 'nothing played before Twilio says so');
    await eventually(() => stream.sent('media').length === 50);
    assert.equal(stream.sent('mark').length, 50, 'a mark after each frame');
    // Twilio plays at real time: after ~300 ms the position has moved, and only as far as played.
    await eventually(() => endpoint.playedMs() >= 200);
    const heard = endpoint.playedMs();
    assert.ok(heard < 800, `played ${heard} ms of 1000`);
    endpoint.clear();
    await eventually(() => stream.sent('clear').length === 1);
    await eventually(() => stream.echoedMarks.length === 50, 2_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(endpoint.playedMs(), heard, 'marks Twilio returns on clear are not played audio');
    assert.ok(stream.playedSamples < 8000 * 0.9, `Twilio played ${stream.playedSamples} samples of the 8 000 sent`);
    // The next reply starts again from zero.
    endpoint.send({ type: 'agent_talking', utteranceId: 'utt_2' });
    endpoint.playAudio(frame);
    await eventually(() => endpoint.playedMs() === 20);
    const stats = endpoint.mediaStats();
    assert.equal(stats.packets_out, 51);
    assert.equal(stats.bytes_out, 51 * 160);
    endpoint.end({ reason: 'agent_hangup', status: 'ended' });
    assert.equal(await stream.closed, 1000);
  });

  it("closes once Twilio has played the agent's last words (its last mark), or at a bound when it never says so", { timeout: 10_000 }, async () => {
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000)));
    const lastWords = async (stall: boolean) => {
      const { stream, endpoint } = await open();
      endpoint.send({ type: 'agent_talking', utteranceId: 'utt_1' });
      for (let i = 0; i < 25; i += 1) endpoint.playAudio(frame); // 500 ms sent at once, as the call ends
      if (stall) stream.stall();
      const at = performance.now();
      endpoint.end({ reason: 'agent_hangup', status: 'ended' });
      assert.equal(await stream.closed, 1000);
      return { playedSamples: stream.playedSamples, waitedMs: performance.now() - at };
    };
    const played = await lastWords(false);
    assert.equal(played.playedSamples, 25 * 160, 'every frame was played before the close');
    const stalled = await lastWords(true);
    assert.equal(stalled.playedSamples, 0);
    assert.ok(stalled.waitedMs >= 900, `a carrier that never echoes is waited for the audio's length and the slack, no longer (${Math.round(stalled.waitedMs)} ms)`);
  });

  it('presses keys as in-band Q.23 tones queued after the audio already sent; resolves once Twilio played them', { timeout: 10_000 }, async () => {
    const { stream, endpoint } = await open();
    endpoint.send({ type: 'agent_talking', utteranceId: 'utt_1' });
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000)));
    for (let i = 0; i < 10; i += 1) endpoint.playAudio(frame); // 200 ms of words, then the keys
    await assert.rejects(endpoint.sendDigits('12x'), /"x" is not a key/);
    const pressed = endpoint.sendDigits('1#9*');
    let done = false;
    void pressed.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(done, false, 'not resolved before Twilio played the tones');
    await pressed;
    // Four keys of 100 ms tone and 100 ms silence after 200 ms of words: all played by now.
    assert.ok(stream.playedSamples >= 8 * (200 + 800) - 20, `played ${stream.playedSamples} samples`);
    assert.equal(stream.keysHeard(), '1#9*');
    const audio = stream.playedAudio();
    assert.equal(stream.sent('media').length, 10 + 40, 'the words, then the tones in 20 ms messages (no key sent for the refused press)');
    const words = audio.subarray(0, 8 * 200);
    const peak = words.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    assert.ok(peak > 6000 && peak < 9000, 'the words played first, whole');
    assert.equal(stream.received.at(-1)?.event, 'mark', 'a mark after the tones says when they played');
    assert.equal(endpoint.playedMs() <= 200, true, "the keys are not part of the reply's played position");
    // Cleared (barge-in) before they play, keys fail; a stream that ended takes none.
    const cut = endpoint.sendDigits('555');
    endpoint.clear();
    await assert.rejects(cut, /cleared/);
    endpoint.end({ reason: 'agent_hangup', status: 'ended' });
    await assert.rejects(endpoint.sendDigits('1'), /not open/);
  });

  it('counts the chunks that never arrived as lost', { timeout: 10_000 }, async () => {
    const { stream, endpoint, sink } = await open();
    const chunk = encodeMulaw(new Int16Array(160));
    stream.sendMedia(chunk);
    // Chunks 2 and 3 are lost on the way: Twilio's numbering skips them.
    stream.skipChunks(2);
    stream.sendMedia(chunk);
    stream.sendMedia(chunk);
    await eventually(() => endpoint.mediaStats().packets_in === 3);
    assert.equal(endpoint.mediaStats().packets_lost, 2);
    assert.equal(sink.samples > 0, true);
    stream.stop();
  });

  it('a closed socket without stop is a lost call; garbage is refused and lost; a flood is cut off', { timeout: 10_000 }, async () => {
    const a = await open();
    a.stream.ws.terminate();
    await eventually(() => a.sink.ends.includes('lost'));

    const b = await open();
    b.stream.raw('not json');
    assert.equal(await b.stream.closed, 1003);
    assert.deepEqual(b.sink.ends, ['lost']);

    const c = await open();
    const chunk = encodeMulaw(new Int16Array(160));
    for (let i = 0; i < 1000; i += 1) c.stream.sendMedia(chunk); // 20 s of audio at once
    assert.equal(await c.stream.closed, 1008);
    assert.deepEqual(c.sink.ends, ['flood']);
    assert.ok(c.sink.samples < 16 * 2_500, `at most the burst reached the session (${c.sink.samples} samples)`);
  });
});

/** The session's side: what the endpoint handed over. */
class Sink implements EndpointSink {
  samples = 0;
  /** The length of each piece of audio handed over, samples. */
  readonly chunks: number[] = [];
  peak = 0;
  digits = '';
  readonly ends: string[] = [];
  audio(pcm: Int16Array): void {
    this.samples += pcm.length;
    this.chunks.push(pcm.length);
    for (const s of pcm) this.peak = Math.max(this.peak, Math.abs(s));
  }
  dtmf(digits: string): void {
    this.digits += digits;
  }
  hangup(): void {
    this.ends.push('hangup');
  }
  lost(): void {
    this.ends.push('lost');
  }
  flood(): void {
    this.ends.push('flood');
  }
}
