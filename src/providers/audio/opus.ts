/**
 * Opus for WebRTC (the server's endpoint and the Node client): libopus compiled to WASM (the `@evan/opus` package's build, loaded here
 * directly so its whole decoder is reachable: in-band FEC and packet-loss concealment). 20 ms
 * frames, mono. The pipeline's 16 kHz goes in and comes out directly (libopus resamples inside the
 * codec); on the wire the RTP clock is Opus's 48 kHz whatever the rate inside (RFC 7587).
 *
 * One WASM instance serves every call of the process: each call has its own encoder and decoder
 * state in its memory, and the calls into it are synchronous, so they share one packet buffer and
 * one PCM buffer.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';

/** The rate of the PCM in and out: the pipeline's. */
const ENDPOINT_SAMPLE_RATE = 16_000;
/** Samples of one 20 ms frame at the pipeline's 16 kHz. */
export const FRAME_SAMPLES = ENDPOINT_SAMPLE_RATE / 50;
/** The length of one frame, ms. */
export const FRAME_MS = 20;
/** Opus's RTP clock (RFC 7587): 48 000 ticks a second, whatever the audio's rate. */
export const OPUS_RTP_CLOCK = 48_000;
/** RTP ticks per pipeline sample. */
export const TICKS_PER_SAMPLE = OPUS_RTP_CLOCK / ENDPOINT_SAMPLE_RATE;

// libopus's constants (opus_defines.h).
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
const OPUS_SET_DTX = 4016;

/** The agent's voice: 24 kbps, with in-band FEC for up to 10 % loss. */
const ENCODER_BITRATE = 24_000;
const EXPECTED_LOSS_PERCENT = 10;
/**
 * libopus's encoder complexity (0-10), where its default is 10. Encoding is nearly all of Opus's
 * cost on the server (decoding a frame is about a twentieth of encoding one), and at 5 it costs
 * about half of 10's for speech at this bitrate with the same bitrate out (BENCHMARKS.md,
 * "WebRTC latency under load"): what lets one server carry a hundred calls. Chromium on phones
 * sends at 5 too.
 */
export const ENCODER_COMPLEXITY = 5;

/** Largest packet in or out, bytes (Opus's own bound is 1 275 per frame, up to 6 frames a packet). */
const PACKET_BYTES = 8_192;
/** The frame lengths the encoder takes, samples: 10, 20, 40 and 60 ms. */
const OPUS_FRAME_SAMPLES = [FRAME_SAMPLES / 2, FRAME_SAMPLES, FRAME_SAMPLES * 2, FRAME_SAMPLES * 3];
/** Most samples one decode may give: 120 ms at 16 kHz. */
const MAX_DECODE_SAMPLES = ENDPOINT_SAMPLE_RATE * 0.12;

interface OpusExports {
  memory: WebAssembly.Memory;
  malloc(bytes: number): number;
  free(pointer: number): void;
  opus_strerror(code: number): number;
  opus_decoder_get_size(channels: number): number;
  opus_decoder_init(state: number, rate: number, channels: number): number;
  opus_decode(state: number, data: number, length: number, pcm: number, frameSize: number, decodeFec: number): number;
  opus_encoder_get_size(channels: number): number;
  opus_encoder_init(state: number, rate: number, channels: number, application: number): number;
  opus_encoder_ctl_set(state: number, request: number, value: number): number;
  opus_encode(state: number, pcm: number, frameSize: number, data: number, maxBytes: number): number;
}

interface OpusLibrary {
  wasm: OpusExports;
  /** Where packets are put for decoding and written by encoding. */
  packet: number;
  /** Where PCM is put for encoding and written by decoding. */
  pcm: number;
}

let library: OpusLibrary | undefined;

/** The process's libopus, loaded on first use (the SIMD build where the engine has SIMD). */
function opus(): OpusLibrary {
  if (library) return library;
  const require = createRequire(import.meta.url);
  // A minimal module using a SIMD instruction: valid only where WASM SIMD is supported.
  const simd = WebAssembly.validate(Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 10, 9, 1, 7, 0, 65, 0, 253, 15, 26, 11));
  const file = require.resolve(`@evan/opus/wasm/${simd ? 'simd' : 'opus'}.wasm`);
  const instance = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(file)), {
    // The build's C runtime imports these; libopus never writes to a file or exits.
    wasi_snapshot_preview1: { fd_seek: () => 0, fd_write: () => 0, fd_close: () => 0, proc_exit: () => undefined },
    env: { emscripten_notify_memory_growth: () => undefined },
  });
  const wasm = instance.exports as unknown as OpusExports;
  library = { wasm, packet: wasm.malloc(PACKET_BYTES), pcm: wasm.malloc(MAX_DECODE_SAMPLES * 2) };
  return library;
}

/** libopus's message for a negative return code. */
function opusError(wasm: OpusExports, code: number): Error {
  const bytes = new Uint8Array(wasm.memory.buffer);
  let end = wasm.opus_strerror(code);
  const start = end;
  while (end < bytes.length && bytes[end] !== 0) end++;
  return new Error(`opus: ${Buffer.from(bytes.subarray(start, end)).toString('latin1')}`);
}

/** One call's Opus encoder (the agent's audio) and decoder (the caller's). */
export class OpusCodec {
  readonly #lib = opus();
  #encoder: number;
  #decoder: number;

  /** `dtx`: the caller asked for discontinuous transmission (its SDP's `usedtx=1`); `complexity`: ENCODER_COMPLEXITY unless given (0-10). */
  constructor(options: { dtx: boolean; complexity?: number }) {
    const { wasm } = this.#lib;
    this.#encoder = wasm.malloc(wasm.opus_encoder_get_size(1));
    this.#decoder = wasm.malloc(wasm.opus_decoder_get_size(1));
    const failed = Math.min(wasm.opus_encoder_init(this.#encoder, ENDPOINT_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP), wasm.opus_decoder_init(this.#decoder, ENDPOINT_SAMPLE_RATE, 1));
    if (failed < 0) {
      this.close();
      throw opusError(wasm, failed);
    }
    wasm.opus_encoder_ctl_set(this.#encoder, OPUS_SET_BITRATE, ENCODER_BITRATE);
    wasm.opus_encoder_ctl_set(this.#encoder, OPUS_SET_INBAND_FEC, 1);
    wasm.opus_encoder_ctl_set(this.#encoder, OPUS_SET_PACKET_LOSS_PERC, EXPECTED_LOSS_PERCENT);
    wasm.opus_encoder_ctl_set(this.#encoder, OPUS_SET_DTX, options.dtx ? 1 : 0);
    wasm.opus_encoder_ctl_set(this.#encoder, OPUS_SET_COMPLEXITY, options.complexity ?? ENCODER_COMPLEXITY);
  }

  /**
   * Encodes one frame of `frameSamples` (by default 20 ms, FRAME_SAMPLES; 10, 40 and 60 ms are
   * Opus frames too, RFC 6716 2.1.4); shorter input is padded with silence.
   */
  encode(pcm: Int16Array, frameSamples: number = FRAME_SAMPLES): Buffer {
    if (!this.#encoder) throw new Error('opus: the codec is closed');
    if (!OPUS_FRAME_SAMPLES.includes(frameSamples)) throw new Error(`opus: ${frameSamples} samples is not a frame length`);
    const { wasm, pcm: at, packet } = this.#lib;
    const frame = new Int16Array(wasm.memory.buffer, at, frameSamples);
    frame.fill(0);
    frame.set(pcm.subarray(0, frameSamples));
    const bytes = wasm.opus_encode(this.#encoder, at, frameSamples, packet, PACKET_BYTES);
    if (bytes < 0) throw opusError(wasm, bytes);
    return Buffer.from(new Uint8Array(wasm.memory.buffer, packet, bytes));
  }

  /** Decodes one packet to 16 kHz PCM (2.5 to 120 ms of it); null when the packet is not Opus. */
  decode(packet: Buffer): Int16Array | null {
    return this.#decode(packet, MAX_DECODE_SAMPLES, false);
  }

  /**
   * The frame lost just before `next`, of `samples` samples, rebuilt from the low-bitrate copy
   * that in-band FEC puts in `next` (concealed instead when `next` carries none); null when
   * `next` is not Opus.
   */
  recover(next: Buffer, samples: number): Int16Array | null {
    return this.#decode(next, Math.min(samples, MAX_DECODE_SAMPLES), true);
  }

  /** `samples` of packet-loss concealment: the decoder's estimate of audio that never came. */
  conceal(samples: number): Int16Array {
    const { wasm, pcm } = this.#lib;
    const out = new Int16Array(samples);
    if (!this.#decoder) return out;
    for (let done = 0; done < samples; ) {
      // libopus conceals in multiples of 2.5 ms, up to the 120 ms its buffer holds.
      const want = Math.min(samples - done, MAX_DECODE_SAMPLES);
      const got = wasm.opus_decode(this.#decoder, 0, 0, pcm, want, 0);
      if (got <= 0) break;
      out.set(new Int16Array(wasm.memory.buffer, pcm, Math.min(got, samples - done)), done);
      done += got;
    }
    return out;
  }

  #decode(packet: Buffer, maxSamples: number, fec: boolean): Int16Array | null {
    if (!this.#decoder || packet.byteLength === 0 || packet.byteLength > PACKET_BYTES) return null;
    const { wasm, packet: at, pcm } = this.#lib;
    new Uint8Array(wasm.memory.buffer, at, packet.byteLength).set(packet);
    const samples = wasm.opus_decode(this.#decoder, at, packet.byteLength, pcm, maxSamples, fec ? 1 : 0);
    if (samples < 0) return null;
    return new Int16Array(wasm.memory.buffer, pcm, samples).slice();
  }

  /** Frees the call's encoder and decoder; idempotent. */
  close(): void {
    const { wasm } = this.#lib;
    if (this.#encoder) wasm.free(this.#encoder);
    if (this.#decoder) wasm.free(this.#decoder);
    this.#encoder = 0;
    this.#decoder = 0;
  }
}
