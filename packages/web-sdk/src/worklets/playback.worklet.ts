/**
 * Playback AudioWorklet: receives the agent's 16 kHz PCM16, resamples it to the context's rate
 * and plays it through a small jitter buffer (PlaybackQueue). `clear` drops everything queued at
 * once (barge-in). Reports counters to the main thread about every 50 ms.
 */
import { PlaybackQueue } from '../playback-queue.ts';
import { StreamResampler, pcm16FromBytes, pcm16ToFloat } from '../pcm.ts';
import { WIRE_SAMPLE_RATE } from '../protocol.ts';
import { PLAYBACK_PROCESSOR, type PlaybackCommand, type PlaybackOptions } from './messages.ts';

const REPORT_EVERY_SAMPLES = Math.round(sampleRate * 0.05);

class PlaybackProcessor extends AudioWorkletProcessor {
  readonly #resampler = new StreamResampler(WIRE_SAMPLE_RATE, sampleRate);
  readonly #queue: PlaybackQueue;
  readonly #emitSamples: boolean;
  /** Played samples awaiting the next report (only with emitSamples); bounded by the report period. */
  #pending: Float32Array[] = [];
  #sinceReport = 0;
  #stopped = false;

  constructor(options?: { processorOptions?: Partial<PlaybackOptions> }) {
    super(options);
    const o = options?.processorOptions ?? {};
    const ms = (value: number) => Math.round((sampleRate * value) / 1000);
    this.#queue = new PlaybackQueue(ms(o.capacityMs ?? 2000), ms(o.prebufferMs ?? 80));
    this.#emitSamples = o.emitSamples === true;
    this.port.onmessage = (event: MessageEvent<PlaybackCommand>) => {
      const command = event.data;
      if (command.type === 'audio') this.#queue.push(this.#resampler.process(pcm16ToFloat(pcm16FromBytes(command.pcm))));
      else if (command.type === 'clear') {
        this.#queue.clear();
        this.#resampler.reset();
        this.#report();
      } else if (command.type === 'stop') this.#stopped = true;
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    if (this.#stopped) return false;
    const output = outputs[0];
    const first = output?.[0];
    if (!output || !first) return true;
    const played = this.#queue.render(first);
    for (let c = 1; c < output.length; c++) output[c]!.set(first);
    if (this.#emitSamples && played > 0) this.#pending.push(first.slice(0, played));
    this.#sinceReport += first.length;
    if (this.#sinceReport >= REPORT_EVERY_SAMPLES) this.#report();
    return true;
  }

  #report(): void {
    this.#sinceReport = 0;
    let samples: Float32Array | undefined;
    if (this.#pending.length > 0) {
      samples = new Float32Array(this.#pending.reduce((n, a) => n + a.length, 0));
      let offset = 0;
      for (const part of this.#pending) {
        samples.set(part, offset);
        offset += part.length;
      }
      this.#pending = [];
    }
    const q = this.#queue;
    this.port.postMessage(
      { type: 'stats', playedSamples: q.playedSamples, droppedSamples: q.droppedSamples, queuedSamples: q.size, samples },
      samples ? [samples.buffer] : [],
    );
  }
}

registerProcessor(PLAYBACK_PROCESSOR, PlaybackProcessor);
