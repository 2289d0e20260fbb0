/**
 * The Opus codec's repair of lost packets (src/providers/audio/opus.ts): a frame lost before a
 * packet that carries an in-band FEC copy is rebuilt from it, and concealment continues the audio,
 * where filling with silence (what the endpoint did before) leaves a hole.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRAME_SAMPLES, OpusCodec } from '../../src/providers/audio/opus.ts';

/** A vowel-like voiced sound: harmonics of 150 Hz, 16 kHz. */
function voiced(frames: number): Int16Array {
  const out = new Int16Array(frames * FRAME_SAMPLES);
  for (let i = 0; i < out.length; i++) {
    const t = i / 16_000;
    out[i] = Math.round(4000 * (Math.sin(2 * Math.PI * 150 * t) + 0.6 * Math.sin(2 * Math.PI * 300 * t) + 0.3 * Math.sin(2 * Math.PI * 450 * t)));
  }
  return out;
}

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

describe('Opus repair of lost packets', () => {
  const sent = voiced(30);
  const encoder = new OpusCodec({ dtx: false });
  const packets = Array.from({ length: 30 }, (_, i) => encoder.encode(sent.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES)));
  encoder.close();

  it('rebuilds a lost frame from the next packet\'s FEC copy, close to what a received frame decodes to', () => {
    const clean = new OpusCodec({ dtx: false });
    const decoded = packets.map((packet) => clean.decode(packet)!);
    clean.close();

    const lossy = new OpusCodec({ dtx: false });
    for (let i = 0; i < 20; i++) lossy.decode(packets[i]!);
    // Packet 20 is lost; packet 21 arrives.
    const recovered = lossy.recover(packets[21]!, FRAME_SAMPLES)!;
    const next = lossy.decode(packets[21]!)!;
    lossy.close();
    assert.equal(recovered.length, FRAME_SAMPLES);
    assert.ok(rms(recovered) > 0.5 * rms(decoded[20]!), `recovered rms ${rms(recovered)} against ${rms(decoded[20]!)}: not a hole`);
    assert.ok(rms(next) > 0.5 * rms(decoded[21]!), 'the packet after the loss decodes as usual');
  });

  it('conceals a run of lost frames with audio that continues the voice, then fades', () => {
    const codec = new OpusCodec({ dtx: false });
    for (let i = 0; i < 20; i++) codec.decode(packets[i]!);
    const concealed = codec.conceal(3 * FRAME_SAMPLES);
    codec.close();
    assert.equal(concealed.length, 3 * FRAME_SAMPLES);
    assert.ok(rms(concealed.subarray(0, FRAME_SAMPLES)) > 1000, `the first concealed frame continues the voice (rms ${rms(concealed.subarray(0, FRAME_SAMPLES))})`);
  });

  it('refuses what is not Opus, and does nothing once closed', () => {
    const codec = new OpusCodec({ dtx: false });
    assert.equal(codec.decode(Buffer.alloc(0)), null);
    assert.equal(codec.decode(Buffer.alloc(9_000, 1)), null, 'longer than any Opus packet');
    codec.close();
    codec.close();
    assert.equal(codec.decode(packets[0]!), null);
    assert.deepEqual(codec.conceal(FRAME_SAMPLES), new Int16Array(FRAME_SAMPLES));
    assert.throws(() => codec.encode(new Int16Array(FRAME_SAMPLES)), /closed/);
  });
});
