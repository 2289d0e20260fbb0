import { FRAME_MS, type AudioFrame } from '../frames.ts';
import type { VadFrame } from './vad.stage.ts';

/**
 * Segments the user's audio into utterances from VAD verdicts:
 * - speech starts when `onsetFrames` of the last `onsetWindow` frames are voiced (default 3 of 4,
 *   i.e. 60 ms of speech); the `prerollMs` of audio before the onset goes with it so the
 *   recogniser hears the first phoneme;
 * - the utterance (the user's turn) ends after `endpointingMs` of continuous non-speech
 *   (default 500 ms), or, with `endOfTurnMs`, after the silence it asks for at each silent frame
 *   (adaptive end of turn, src/voice/end-of-turn.ts); `endMs` is the end of the last voiced frame.
 */
export interface TurnOptions {
  /** Silence that ends a turn, ms; default 500. Ignored with `endOfTurnMs`. */
  endpointingMs?: number;
  /**
   * The silence that ends the turn now, ms, asked at each frame of an open utterance with the
   * silence so far (it may change as the interim transcript does); default: `endpointingMs`.
   */
  endOfTurnMs?: (silenceMs: number) => number;
  /** Audio kept from before the detected onset, ms; default 200. */
  prerollMs?: number;
  onsetFrames?: number;
  onsetWindow?: number;
}

export type TurnEvent =
  /** `heardAtMs`: when the first voiced frame reached the server, on the pipeline clock. */
  | { type: 'speech_start'; startMs: number; heardAtMs: number; preroll: AudioFrame[] }
  /**
   * Every frame while an utterance is open; `voicedMs` counts voiced audio since the onset,
   * `silenceMs` the silence since the last voiced frame (0 on a voiced frame).
   */
  | { type: 'speech'; frame: VadFrame; voicedMs: number; silenceMs: number }
  | { type: 'speech_end'; startMs: number; endMs: number; heardAtMs: number; voicedMs: number }
  /** Frames outside utterances (for silence timers). */
  | { type: 'silence'; frame: VadFrame };

/** The synchronous state machine behind turnStage, usable on its own with a frame harness. */
export class TurnDetector {
  readonly #endpointingFrames: number;
  readonly #prerollFrames: number;
  readonly #onsetFrames: number;
  readonly #onsetWindow: number;
  readonly #endOfTurnMs: ((silenceMs: number) => number) | undefined;
  #recent: VadFrame[] = [];
  #inSpeech = false;
  #startMs = 0;
  #heardAtMs = 0;
  #lastVoicedEndMs = 0;
  #silentFrames = 0;
  #voicedMs = 0;

  constructor(options: TurnOptions = {}) {
    this.#endpointingFrames = Math.max(1, Math.round((options.endpointingMs ?? 500) / FRAME_MS));
    this.#endOfTurnMs = options.endOfTurnMs;
    this.#onsetWindow = options.onsetWindow ?? 4;
    this.#onsetFrames = Math.min(options.onsetFrames ?? 3, this.#onsetWindow);
    this.#prerollFrames = Math.max(this.#onsetWindow, Math.round((options.prerollMs ?? 200) / FRAME_MS));
  }

  get inSpeech(): boolean {
    return this.#inSpeech;
  }

  push(f: VadFrame): TurnEvent[] {
    if (!this.#inSpeech) {
      this.#recent.push(f);
      if (this.#recent.length > this.#prerollFrames) this.#recent.shift();
      const window = this.#recent.slice(-this.#onsetWindow);
      const voiced = window.filter((x) => x.speech).length;
      if (voiced < this.#onsetFrames) return [{ type: 'silence', frame: f }];
      this.#inSpeech = true;
      const firstVoiced = window.find((x) => x.speech) ?? f;
      this.#startMs = firstVoiced.offsetMs;
      this.#heardAtMs = firstVoiced.receivedMs ?? firstVoiced.offsetMs;
      this.#voicedMs = voiced * FRAME_MS;
      this.#silentFrames = 0;
      this.#lastVoicedEndMs = f.offsetMs + FRAME_MS;
      const preroll = this.#recent;
      this.#recent = [];
      return [
        { type: 'speech_start', startMs: this.#startMs, heardAtMs: this.#heardAtMs, preroll },
        { type: 'speech', frame: f, voicedMs: this.#voicedMs, silenceMs: 0 },
      ];
    }
    if (f.speech) {
      this.#voicedMs += FRAME_MS;
      this.#silentFrames = 0;
      this.#lastVoicedEndMs = f.offsetMs + FRAME_MS;
    } else {
      this.#silentFrames++;
    }
    const events: TurnEvent[] = [{ type: 'speech', frame: f, voicedMs: this.#voicedMs, silenceMs: this.#silentFrames * FRAME_MS }];
    const needed = this.#endOfTurnMs ? Math.max(1, Math.round(this.#endOfTurnMs(this.#silentFrames * FRAME_MS) / FRAME_MS)) : this.#endpointingFrames;
    if (!f.speech && this.#silentFrames >= needed) {
      this.#inSpeech = false;
      events.push({ type: 'speech_end', startMs: this.#startMs, endMs: this.#lastVoicedEndMs, heardAtMs: this.#heardAtMs, voicedMs: this.#voicedMs });
    }
    return events;
  }
}

export async function* turnStage(frames: AsyncIterable<VadFrame>, options: TurnOptions, signal: AbortSignal): AsyncIterable<TurnEvent> {
  const d = new TurnDetector(options);
  for await (const f of frames) {
    if (signal.aborted) return;
    yield* d.push(f);
  }
}
