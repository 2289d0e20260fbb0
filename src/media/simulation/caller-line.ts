/**
 * The simulated caller's side of an in-process call: what it has left to say, handed to the
 * session one 20 ms frame per step of the call's clock (silence when nothing is queued, as a
 * microphone sends), the keys it presses, and waits measured on the call's own time.
 */
import { ENDPOINT_SAMPLE_RATE, type CallEndpoint, type CallEnding, type CallEvent, type EndpointSink } from '../endpoint.ts';
import { type CallerClock, STEP_MS } from './caller-clock.ts';

/** One step of audio at the port's rate. */
const STEP_SAMPLES = (ENDPOINT_SAMPLE_RATE / 1000) * STEP_MS;
/** From one key press to the next, ms on the call's clock (a keypad's tone and its gap). */
export const KEY_INTERVAL_MS = 120;

/** The loopback endpoint's caller side, as the line uses it (src/media/loopback/loopback.endpoint.ts, realTime off). */
export interface SimulatedCallerEndpoint extends CallEndpoint {
  readonly events: readonly CallEvent[];
  readonly ended: Promise<CallEnding>;
  /** Hands the caller's audio to the session at once. */
  push(pcm: Int16Array): void;
  hangup(): void;
}

export class CallerLine {
  readonly #endpoint: SimulatedCallerEndpoint;
  readonly #clock: CallerClock;
  readonly #queue: Int16Array[] = [];
  #ms = 0;
  #over = false;

  constructor(endpoint: SimulatedCallerEndpoint, clock: CallerClock) {
    this.#endpoint = endpoint;
    this.#clock = clock;
    void endpoint.ended.then(() => (this.#over = true));
  }

  /** How long the call has run on its clock, ms. */
  get elapsedMs(): number {
    return this.#ms;
  }

  /** The call has ended. */
  get over(): boolean {
    return this.#over;
  }

  /** Audio queued and not handed over yet. */
  get speaking(): boolean {
    return this.#queue.length > 0;
  }

  /** Queues the caller's speech (16 kHz mono PCM) after what is queued. */
  say(pcm: Int16Array): void {
    if (pcm.length > 0) this.#queue.push(pcm);
  }

  /** The first event from index `mark` on that passes `test`. */
  seen(mark: number, test: (e: CallEvent) => boolean): CallEvent | undefined {
    const events = this.#endpoint.events;
    for (let i = mark; i < events.length; i++) if (test(events[i]!)) return events[i];
    return undefined;
  }

  /** How many events the session has sent so far (a mark for `seen`). */
  get mark(): number {
    return this.#endpoint.events.length;
  }

  /**
   * Steps the call's clock until `done()` holds, the call is over, `signal` aborts or `maxMs` of
   * the call's time have gone by; true when `done()` held.
   */
  async until(done: () => boolean, maxMs: number, signal: AbortSignal): Promise<boolean> {
    const end = this.#ms + maxMs;
    while (!done()) {
      if (this.#over || signal.aborted || this.#ms >= end) return false;
      await this.step();
    }
    return true;
  }

  /** Presses keys one at a time, KEY_INTERVAL_MS apart, as a phone sends them (one event per key). */
  async press(keys: string, sink: EndpointSink, signal: AbortSignal): Promise<void> {
    if (!sink.dtmf) throw new Error("this server's calls take no keypad digits");
    for (const [i, key] of [...keys].entries()) {
      if (this.#over || signal.aborted) return;
      if (i > 0) await this.until(() => false, KEY_INTERVAL_MS, signal);
      sink.dtmf(key);
    }
  }

  /** One step: a frame of the queue (or silence) to the session, the clock STEP_MS on. */
  async step(): Promise<void> {
    await this.#clock.step(() => {
      if (!this.#over) this.#endpoint.push(this.#nextFrame());
    });
    this.#ms += STEP_MS;
  }

  #nextFrame(): Int16Array {
    const frame = new Int16Array(STEP_SAMPLES);
    let filled = 0;
    while (filled < STEP_SAMPLES && this.#queue.length > 0) {
      const head = this.#queue[0]!;
      const n = Math.min(head.length, STEP_SAMPLES - filled);
      frame.set(head.subarray(0, n), filled);
      filled += n;
      if (n === head.length) this.#queue.shift();
      else this.#queue[0] = head.subarray(n);
    }
    return frame;
  }
}
