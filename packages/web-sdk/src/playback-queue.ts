/**
 * The agent-audio jitter buffer used by the playback AudioWorklet (and unit-tested in Node).
 *
 * A bounded ring of Float32 samples at the output rate. Playback starts once `prebufferSamples`
 * are queued (absorbing network jitter), or once no audio has arrived for as long (the tail of an
 * utterance shorter than the prebuffer still plays). When it runs dry it buffers again. `clear()`
 * drops everything queued at once (barge-in). When full, the oldest samples are dropped: the
 * server paces its audio at real time (at most ~100 ms ahead), so overflow means something is
 * wrong and bounded memory matters more than those samples.
 */
export class PlaybackQueue {
  readonly capacity: number;
  readonly prebufferSamples: number;
  readonly #ring: Float32Array;
  #read = 0;
  #size = 0;
  #playing = false;
  /** Output samples rendered since the last push (counts towards the idle start). */
  #sinceLastPush = 0;

  /** Real (queued) samples written to the output so far. */
  playedSamples = 0;
  /** Samples dropped by `clear()` and by overflow. */
  droppedSamples = 0;

  /**
   * @param capacity ring size in samples (e.g. 2 s at the output rate)
   * @param prebufferSamples samples to queue before playing (e.g. 80 ms at the output rate)
   */
  constructor(capacity: number, prebufferSamples: number) {
    if (capacity < 1 || prebufferSamples < 0 || prebufferSamples > capacity) throw new RangeError('bad queue sizes');
    this.capacity = capacity;
    this.prebufferSamples = prebufferSamples;
    this.#ring = new Float32Array(capacity);
  }

  /** Samples queued and not yet played. */
  get size(): number {
    return this.#size;
  }

  get playing(): boolean {
    return this.#playing;
  }

  push(samples: Float32Array): void {
    this.#sinceLastPush = 0;
    let input = samples;
    if (input.length > this.capacity) {
      this.droppedSamples += input.length - this.capacity;
      input = input.subarray(input.length - this.capacity);
    }
    const overflow = this.#size + input.length - this.capacity;
    if (overflow > 0) {
      this.#read = (this.#read + overflow) % this.capacity;
      this.#size -= overflow;
      this.droppedSamples += overflow;
    }
    const write = (this.#read + this.#size) % this.capacity;
    const first = Math.min(input.length, this.capacity - write);
    this.#ring.set(input.subarray(0, first), write);
    this.#ring.set(input.subarray(first), 0);
    this.#size += input.length;
  }

  /** Drops every queued sample now and waits for the prebuffer again. */
  clear(): void {
    this.droppedSamples += this.#size;
    this.#size = 0;
    this.#read = 0;
    this.#playing = false;
  }

  /**
   * Fills `out` with the next samples (silence where there are none); returns how many real
   * samples were written.
   */
  render(out: Float32Array): number {
    if (!this.#playing && this.#size > 0) {
      if (this.#size >= this.prebufferSamples || this.#sinceLastPush >= this.prebufferSamples) this.#playing = true;
    }
    this.#sinceLastPush += out.length;
    if (!this.#playing) {
      out.fill(0);
      return 0;
    }
    const count = Math.min(out.length, this.#size);
    const first = Math.min(count, this.capacity - this.#read);
    out.set(this.#ring.subarray(this.#read, this.#read + first), 0);
    out.set(this.#ring.subarray(0, count - first), first);
    out.fill(0, count);
    this.#read = (this.#read + count) % this.capacity;
    this.#size -= count;
    this.playedSamples += count;
    // Ran dry (end of an utterance, or late audio): buffer again before resuming.
    if (this.#size === 0) this.#playing = false;
    return count;
  }
}
