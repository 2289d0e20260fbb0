import type { SttResult, SttStream } from '../../providers/stt.ts';
import { FRAME_MS } from '../frames.ts';

/**
 * Silence after the last voiced frame that is written to the recogniser at once, ms: enough for a
 * streaming recogniser to commit the last word (end-of-turn.ts, HYPOTHESIS_SETTLE_MS: 250 ms,
 * judged one frame late) and for PocketSphinx to end it on silence.
 */
export const TRAILING_SILENCE_MS = 300;

/**
 * Most silence held back at once, ms: beyond it the oldest held frame is written (memory stays
 * bounded; a pause that long ends the turn well before with any end-of-turn setting).
 */
const MAX_HELD_MS = 10_000;

/**
 * What the recogniser is given of an utterance: its pre-roll and speech, and of each pause only
 * the first TRAILING_SILENCE_MS. The rest of a pause is held back: written, in order, when the
 * caller speaks again within the turn (the recogniser's timeline and word times stay whole), and
 * dropped when the turn ends. The decoder's cost is per second of audio (BENCHMARKS.md, "The
 * embedded recogniser's cost"), and the end of turn's silence (0.3-1.2 s a turn) was all decoded.
 */
export class SpeechFeed {
  readonly #stream: SttStream;
  #held: Int16Array[] = [];

  constructor(stream: SttStream) {
    this.#stream = stream;
  }

  /** A frame of the utterance; `silenceMs`: the pause so far with this frame (0 when it is voiced). */
  write(pcm: Int16Array, silenceMs = 0): void {
    if (silenceMs > TRAILING_SILENCE_MS) {
      this.#held.push(pcm);
      if (this.#held.length * FRAME_MS > MAX_HELD_MS) this.#stream.write(this.#held.shift()!);
      return;
    }
    for (const held of this.#held.splice(0)) this.#stream.write(held);
    this.#stream.write(pcm);
  }

  /** The turn has ended: the pause held back is dropped, the utterance finalized. */
  finalize(signal?: AbortSignal): Promise<SttResult> {
    this.#held = [];
    return this.#stream.finalize(signal);
  }

  /**
   * Audio of the utterance the recogniser has not decoded, ms: its own backlog and the pause held
   * back; undefined when the recogniser cannot tell (SttStream.pendingMs). The end of turn reads
   * it to know how much of the silence the recogniser has heard.
   */
  pendingMs(): number | undefined {
    const own = this.#stream.pendingMs?.();
    return own === undefined ? undefined : own + this.#held.length * FRAME_MS;
  }
}
