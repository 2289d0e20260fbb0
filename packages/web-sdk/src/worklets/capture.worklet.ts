/**
 * Capture AudioWorklet: takes the microphone at the context's rate, resamples it to 16 kHz in
 * the worklet (band-limited, see StreamResampler), converts to PCM16 and posts 20 ms frames to the
 * main thread, which sends them on the WebSocket. While muted it posts silence, as the protocol
 * asks (the server's timeline and silence timers keep running).
 */
import { StreamResampler, floatToPcm16, pcm16ToBytes, rms } from '../pcm.ts';
import { WIRE_SAMPLE_RATE } from '../protocol.ts';
import { CAPTURE_PROCESSOR, type CaptureCommand, type CaptureOptions } from './messages.ts';

class CaptureProcessor extends AudioWorkletProcessor {
  readonly #resampler = new StreamResampler(sampleRate, WIRE_SAMPLE_RATE);
  readonly #frame: Float32Array;
  #filled = 0;
  #muted = false;
  #stopped = false;

  constructor(options?: { processorOptions?: Partial<CaptureOptions> }) {
    super(options);
    this.#frame = new Float32Array(options?.processorOptions?.frameSamples ?? 320);
    this.port.onmessage = (event: MessageEvent<CaptureCommand>) => {
      if (event.data.type === 'mute') this.#muted = event.data.muted;
      else if (event.data.type === 'stop') this.#stopped = true;
    };
  }

  process(inputs: Float32Array[][]): boolean {
    if (this.#stopped) return false;
    // First channel only: the track is requested mono; a stereo device's left channel is enough.
    const input = inputs[0]?.[0];
    const quantum = input ?? new Float32Array(128);
    const resampled = this.#resampler.process(quantum);
    let offset = 0;
    while (offset < resampled.length) {
      const take = Math.min(resampled.length - offset, this.#frame.length - this.#filled);
      this.#frame.set(resampled.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === this.#frame.length) {
        if (this.#muted) this.#frame.fill(0);
        const pcm = pcm16ToBytes(floatToPcm16(this.#frame));
        this.port.postMessage({ type: 'frame', pcm, level: rms(this.#frame) }, [pcm]);
        this.#filled = 0;
      }
    }
    return true;
  }
}

registerProcessor(CAPTURE_PROCESSOR, CaptureProcessor);
