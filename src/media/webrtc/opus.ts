/**
 * Opus for WebRTC calls, through `opusscript` (libopus compiled to WASM): 20 ms frames, mono. The
 * pipeline's 16 kHz goes in and comes out directly (libopus resamples inside the codec); on the
 * wire the RTP clock is Opus's 48 kHz whatever the rate inside (RFC 7587).
 */
import OpusScript from 'opusscript';
import { ENDPOINT_SAMPLE_RATE } from '../endpoint.ts';

/** Samples of one 20 ms frame at the pipeline's 16 kHz. */
export const FRAME_SAMPLES = ENDPOINT_SAMPLE_RATE / 50;
/** The length of one frame, ms. */
export const FRAME_MS = 20;
/** Opus's RTP clock (RFC 7587): 48 000 ticks a second, whatever the audio's rate. */
export const OPUS_RTP_CLOCK = 48_000;
/** RTP ticks per pipeline sample. */
export const TICKS_PER_SAMPLE = OPUS_RTP_CLOCK / ENDPOINT_SAMPLE_RATE;

// libopus's encoder controls (opus_defines.h).
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
const OPUS_SET_DTX = 4016;

/** The agent's voice: 24 kbps, with in-band FEC for up to 10 % loss. */
const ENCODER_BITRATE = 24_000;
const EXPECTED_LOSS_PERCENT = 10;

/** One call's Opus encoder (the agent's audio) and decoder (the caller's). */
export class OpusCodec {
  readonly #encoder = new OpusScript(ENDPOINT_SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  readonly #decoder = new OpusScript(ENDPOINT_SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  #closed = false;

  /** `dtx`: the caller asked for discontinuous transmission (its SDP's `usedtx=1`). */
  constructor(options: { dtx: boolean }) {
    this.#encoder.encoderCTL(OPUS_SET_BITRATE, ENCODER_BITRATE);
    this.#encoder.encoderCTL(OPUS_SET_INBAND_FEC, 1);
    this.#encoder.encoderCTL(OPUS_SET_PACKET_LOSS_PERC, EXPECTED_LOSS_PERCENT);
    this.#encoder.encoderCTL(OPUS_SET_DTX, options.dtx ? 1 : 0);
  }

  /** Encodes one 20 ms frame (FRAME_SAMPLES samples; shorter frames are padded with silence). */
  encode(pcm: Int16Array): Buffer {
    const frame = new Int16Array(FRAME_SAMPLES);
    frame.set(pcm.subarray(0, FRAME_SAMPLES));
    return this.#encoder.encode(Buffer.from(frame.buffer), FRAME_SAMPLES);
  }

  /** Decodes one packet to 16 kHz PCM (2.5 to 60 ms of it); null when the packet is not Opus. */
  decode(packet: Buffer): Int16Array | null {
    try {
      const out = this.#decoder.decode(packet);
      return new Int16Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
    } catch {
      return null;
    }
  }

  /** Frees the WASM state; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#encoder.delete();
    this.#decoder.delete();
  }
}
