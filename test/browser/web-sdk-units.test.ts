/** The browser SDK's pure pieces, in Node: PCM conversion, resampler, jitter buffer, protocol parsing, emitter. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TypedEmitter } from '../../packages/web-sdk/src/emitter.ts';
import { PlaybackQueue } from '../../packages/web-sdk/src/playback-queue.ts';
import { StreamResampler, floatToPcm16, pcm16FromBytes, pcm16ToBytes, pcm16ToFloat, rms } from '../../packages/web-sdk/src/pcm.ts';
import { parseServerMessage, webCallUrl } from '../../packages/web-sdk/src/protocol.ts';

function sine(freq: number, rate: number, samples: number, amplitude = 0.5): Float32Array {
  const out = new Float32Array(samples);
  for (let i = 0; i < samples; i++) out[i] = amplitude * Math.sin((2 * Math.PI * freq * i) / rate);
  return out;
}

/** Amplitude of `freq` in `x` (single-bin DFT), for a signal of whole periods. */
function toneAmplitude(x: Float32Array, freq: number, rate: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < x.length; i++) {
    re += x[i]! * Math.cos((2 * Math.PI * freq * i) / rate);
    im -= x[i]! * Math.sin((2 * Math.PI * freq * i) / rate);
  }
  return (2 * Math.hypot(re, im)) / x.length;
}

/** Runs a resampler over `input` cut into chunks of `chunk` samples. */
function resampleChunked(r: StreamResampler, input: Float32Array, chunk: number): Float32Array {
  const parts: Float32Array[] = [];
  for (let i = 0; i < input.length; i += chunk) parts.push(r.process(input.subarray(i, i + chunk)));
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

describe('PCM16', () => {
  test('float to PCM16 and back, clipped, little-endian on the wire', () => {
    const pcm = floatToPcm16(new Float32Array([0, 1, -1, 0.5, 2, -2]));
    assert.deepEqual([...pcm], [0, 32767, -32768, 16384, 32767, -32768]);
    const bytes = new Uint8Array(pcm16ToBytes(new Int16Array([1, -2])));
    assert.deepEqual([...bytes], [1, 0, 0xfe, 0xff]);
    assert.deepEqual([...pcm16FromBytes(bytes.buffer)], [1, -2]);
    const back = pcm16ToFloat(new Int16Array([16384, -32768]));
    assert.deepEqual([...back], [0.5, -1]);
  });

  test('an odd trailing byte is ignored', () => {
    assert.equal(pcm16FromBytes(new Uint8Array([1, 0, 7]).buffer).length, 1);
  });
});

describe('StreamResampler', () => {
  test('48 kHz -> 16 kHz keeps a 1 kHz tone, at the right length, whatever the chunking', () => {
    const input = sine(1000, 48_000, 48_000);
    const whole = new StreamResampler(48_000, 16_000).process(input);
    const chunked = resampleChunked(new StreamResampler(48_000, 16_000), input, 128);
    assert.ok(Math.abs(whole.length - 16_000) <= 16, `length ${whole.length}`);
    assert.equal(chunked.length, whole.length);
    for (let i = 0; i < whole.length; i++) assert.ok(Math.abs(whole[i]! - chunked[i]!) < 1e-6, `sample ${i}`);
    const steady = whole.subarray(100, 100 + 8000);
    assert.ok(Math.abs(toneAmplitude(steady, 1000, 16_000) - 0.5) < 0.01);
  });

  test('48 kHz -> 16 kHz removes a 10 kHz tone instead of folding it to 6 kHz', () => {
    const out = new StreamResampler(48_000, 16_000).process(sine(10_000, 48_000, 48_000));
    const steady = out.subarray(100, 100 + 8000);
    assert.ok(toneAmplitude(steady, 6000, 16_000) < 0.01, 'no alias at 6 kHz');
    assert.ok(rms(steady) < 0.01);
  });

  test('44.1 kHz -> 16 kHz (a non-integer ratio) and 16 kHz -> 48 kHz keep the tone', () => {
    const down = resampleChunked(new StreamResampler(44_100, 16_000), sine(440, 44_100, 44_100), 128);
    assert.ok(Math.abs(down.length - 16_000) <= 20);
    assert.ok(Math.abs(toneAmplitude(down.subarray(200, 200 + 16_000 - 400), 440, 16_000) - 0.5) < 0.02);
    const up = resampleChunked(new StreamResampler(16_000, 48_000), sine(440, 16_000, 16_000), 320);
    assert.ok(Math.abs(up.length - 48_000) <= 48);
    assert.ok(Math.abs(toneAmplitude(up.subarray(300, 300 + 47_000), 440, 48_000) - 0.5) < 0.02);
  });

  test('reset drops history; equal rates pass through', () => {
    const r = new StreamResampler(16_000, 48_000);
    r.process(sine(440, 16_000, 1000));
    r.reset();
    const afterReset = r.process(new Float32Array(1000));
    assert.equal(rms(afterReset), 0);
    const same = new StreamResampler(16_000, 16_000).process(new Float32Array([0.1, 0.2]));
    assert.deepEqual([...same], [new Float32Array([0.1])[0], new Float32Array([0.2])[0]]);
  });
});

describe('PlaybackQueue', () => {
  const block = (n: number, value = 0.5) => new Float32Array(n).fill(value);

  test('waits for the prebuffer, then plays in order', () => {
    const q = new PlaybackQueue(1000, 300);
    const out = new Float32Array(128);
    q.push(block(200, 0.1));
    assert.equal(q.render(out), 0, 'below the prebuffer');
    q.push(block(200, 0.2));
    assert.equal(q.render(out), 128);
    assert.equal(out[0], new Float32Array([0.1])[0]);
    assert.equal(q.playedSamples, 128);
  });

  test('a short tail plays once no audio has arrived for the prebuffer duration', () => {
    const q = new PlaybackQueue(1000, 300);
    const out = new Float32Array(128);
    q.push(block(100));
    let played = 0;
    for (let i = 0; i < 4; i++) played += q.render(out);
    assert.equal(played, 100);
  });

  test('clear drops everything queued at once (barge-in)', () => {
    const q = new PlaybackQueue(10_000, 100);
    const out = new Float32Array(128);
    q.push(block(5000));
    q.render(out);
    q.clear();
    assert.equal(q.size, 0);
    assert.equal(q.render(out), 0);
    assert.equal(rms(out), 0);
    assert.equal(q.droppedSamples, 5000 - 128);
  });

  test('bounded: overflow drops the oldest samples', () => {
    const q = new PlaybackQueue(1000, 0);
    q.push(block(800, 0.1));
    q.push(block(400, 0.2));
    assert.equal(q.size, 1000);
    assert.equal(q.droppedSamples, 200);
    const out = new Float32Array(1000);
    q.render(out);
    assert.equal(out[0], new Float32Array([0.1])[0]);
    assert.equal(out[999], new Float32Array([0.2])[0]);
    q.push(block(5000));
    assert.equal(q.size, 1000);
  });

  test('wraps around the ring correctly', () => {
    const q = new PlaybackQueue(300, 0);
    const out = new Float32Array(200);
    for (let round = 0; round < 5; round++) {
      const data = Float32Array.from({ length: 200 }, (_, i) => (round * 200 + i) / 10_000);
      q.push(data);
      assert.equal(q.render(out), 200);
      assert.deepEqual([...out], [...data]);
    }
  });
});

describe('protocol', () => {
  test('parses the server messages of docs/media-protocol.md', () => {
    assert.deepEqual(
      parseServerMessage('{"type":"call_started","protocol_version":1,"call_id":"call_1","sample_rate":16000,"agent":{"agent_id":"agent_1","agent_version":3,"agent_name":"Reception"}}'),
      { type: 'call_started', protocol_version: 1, call_id: 'call_1', sample_rate: 16000, agent: { agent_id: 'agent_1', agent_version: 3, agent_name: 'Reception' } },
    );
    assert.deepEqual(parseServerMessage('{"type":"agent_stop_talking","utterance_id":"u1","cut_off":true}'), { type: 'agent_stop_talking', utterance_id: 'u1', cut_off: true });
    assert.deepEqual(
      parseServerMessage('{"type":"update","transcript":[{"role":"agent","content":"Hi"},{"role":"user","content":"yo","cut_off":true},{"role":"x","content":"?"}],"final":false}'),
      { type: 'update', transcript: [{ role: 'agent', content: 'Hi' }, { role: 'user', content: 'yo', cut_off: true }], final: false },
    );
    assert.deepEqual(parseServerMessage('{"type":"call_ended","call_status":"error","disconnection_reason":"error_asr"}'), { type: 'call_ended', call_status: 'error', disconnection_reason: 'error_asr' });
    assert.deepEqual(parseServerMessage('{"type":"error","code":"token_used","message":"used"}'), { type: 'error', code: 'token_used', message: 'used' });
  });

  test('ignores unknown types and malformed messages', () => {
    assert.equal(parseServerMessage('{"type":"something_new"}'), null);
    assert.equal(parseServerMessage('not json'), null);
    assert.equal(parseServerMessage('[1]'), null);
    assert.equal(parseServerMessage('{"type":"call_started"}'), null);
  });

  test('derives the WebSocket URL from the base URL', () => {
    assert.equal(webCallUrl('http://127.0.0.1:8080'), 'ws://127.0.0.1:8080/v2/web-call');
    assert.equal(webCallUrl('https://voice.example.com/'), 'wss://voice.example.com/v2/web-call');
    assert.equal(webCallUrl('https://example.com/voice/?x=1'), 'wss://example.com/voice/v2/web-call');
    assert.throws(() => webCallUrl('ftp://example.com'), /http/);
  });
});

describe('TypedEmitter', () => {
  class Emitter extends TypedEmitter<{ ping: (n: number) => void }> {
    fire(n: number) {
      this.emit('ping', n);
    }
  }

  test('on, once, off', () => {
    const e = new Emitter();
    const seen: number[] = [];
    const listener = (n: number) => seen.push(n);
    e.on('ping', listener);
    e.once('ping', (n) => seen.push(n * 10));
    e.fire(1);
    e.fire(2);
    e.off('ping', listener);
    e.fire(3);
    assert.deepEqual(seen, [1, 10, 2]);
  });
});
