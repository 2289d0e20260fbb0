/**
 * A call carried in-process: the caller is the code holding the endpoint (tests, simulated
 * callers, tools). It speaks the port itself, no wire: the code feeds the caller's audio, reads
 * the session's neutral events and the agent's audio, and hangs up. The agent's audio counts as
 * played the moment it arrives, so this endpoint reports an exact played position.
 */
import type { CallMedia } from '../../domain/call.ts';
import { ENDPOINT_SAMPLE_RATE, type CallEndpoint, type CallEnding, type CallEvent, type EndpointSink } from '../endpoint.ts';

/** One 20 ms frame at the port's rate. */
const FRAME_SAMPLES = (ENDPOINT_SAMPLE_RATE / 1000) * 20;

export interface LoopbackOptions {
  /**
   * Feed the caller's side in real time, 20 ms at a time, with silence whenever nothing is queued
   * (what a real caller's microphone does, and what keeps the session's audio watchdog content);
   * default true. With false, audio reaches the session only through `push`, as fast as the code
   * gives it.
   */
  realTime?: boolean;
}

export class LoopbackEndpoint implements CallEndpoint {
  readonly transport = 'loopback';
  /** Wideband: the call runs at 16 kHz. */
  readonly sampleRate = 16_000;
  /** Every event the session sent, in order. */
  readonly events: CallEvent[] = [];
  /** How the call ended, once it has. */
  readonly ended: Promise<CallEnding>;
  #sink: EndpointSink | undefined;
  readonly #agentAudio: Int16Array[] = [];
  /** Agent samples received since the current reply's `agent_talking`. */
  #replySamples = 0;
  readonly #queue: Int16Array[] = [];
  #queued = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #waiters: Array<{ test: (e: CallEvent) => boolean; resolve: (e: CallEvent) => void }> = [];
  #endWith!: (ending: CallEnding) => void;
  #over = false;
  /** Audio handed over both ways, in pieces and bytes (the call object's `media`). */
  readonly #traffic = { bytesIn: 0, packetsIn: 0, bytesOut: 0, packetsOut: 0 };
  /** When the real-time feed began, and how many frames it has fed. */
  #since: number | undefined;
  #frames = 0;

  constructor(options: LoopbackOptions = {}) {
    this.ended = new Promise((resolve) => (this.#endWith = resolve));
    if (options.realTime ?? true) {
      this.#timer = setInterval(() => this.#tick(), 20);
      this.#timer.unref();
    }
  }

  // --- the port (the session's side) ---------------------------------------------------------

  attach(sink: EndpointSink): void {
    this.#sink = sink;
    if (this.#over) sink.lost();
  }

  send(event: CallEvent): void {
    if (event.type === 'agent_talking') this.#replySamples = 0;
    this.events.push(event);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.test(event)) return true;
      w.resolve(event);
      return false;
    });
  }

  playAudio(pcm: Int16Array): void {
    this.#traffic.packetsOut += 1;
    this.#traffic.bytesOut += pcm.byteLength;
    this.#agentAudio.push(pcm.slice());
    this.#replySamples += pcm.length;
  }

  clear(): void {
    // Played as it came: nothing is queued to drop.
  }

  playedMs(): number {
    return (this.#replySamples * 1000) / ENDPOINT_SAMPLE_RATE;
  }

  /** 16-bit PCM handed over in memory: nothing is lost; no packet timing. */
  mediaStats(): CallMedia {
    const t = this.#traffic;
    return { transport: this.transport, codec: 'pcm16', sample_rate: ENDPOINT_SAMPLE_RATE, bytes_in: t.bytesIn, bytes_out: t.bytesOut, packets_in: t.packetsIn, packets_out: t.packetsOut, packets_lost: 0, jitter_ms: null };
  }

  end(ending: CallEnding): void {
    this.#stop();
    this.#endWith(ending);
  }

  // --- the caller's side (the code's) ----------------------------------------------------------

  /** Queues the caller's audio (16 kHz mono PCM), played in real time after what is queued (realTime), or handed over at once (not). */
  play(pcm: Int16Array): void {
    if (this.#timer === undefined) {
      this.push(pcm);
      return;
    }
    this.#queue.push(pcm);
    this.#queued += pcm.length;
  }

  /** Hands the caller's audio to the session at once, whatever the time. */
  push(pcm: Int16Array): void {
    if (this.#over || !this.#sink) return;
    this.#traffic.packetsIn += 1;
    this.#traffic.bytesIn += pcm.byteLength;
    this.#sink.audio(pcm);
  }

  /** Samples of caller audio queued and not played yet. */
  get queuedSamples(): number {
    return this.#queued;
  }

  /** The caller hangs up. */
  hangup(): void {
    if (this.#over) return;
    this.#sink?.hangup();
  }

  /** The connection is lost (the caller's network). */
  drop(): void {
    if (this.#over) return;
    this.#stop();
    this.#sink?.lost();
  }

  /** The first event, from now or already received, that passes `test`. */
  waitFor(test: (e: CallEvent) => boolean, timeoutMs = 30_000): Promise<CallEvent> {
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('loopback: no such event in time')), timeoutMs);
      this.#waiters.push({ test, resolve: (e) => { clearTimeout(timer); resolve(e); } });
    });
  }

  /** All the agent's audio received so far, as one buffer. */
  agentAudio(): Int16Array {
    const out = new Int16Array(this.#agentAudio.reduce((n, a) => n + a.length, 0));
    let at = 0;
    for (const a of this.#agentAudio) {
      out.set(a, at);
      at += a.length;
    }
    return out;
  }

  /**
   * The frames real time says are due since the call was attached (a timer is late under load:
   * the caller's side catches up, as a microphone's samples do), each of the queue or of silence.
   */
  #tick(): void {
    if (this.#over || !this.#sink) return;
    this.#since ??= performance.now();
    const due = Math.floor((performance.now() - this.#since) / 20) + 1;
    while (this.#frames < due && !this.#over) {
      this.#frames += 1;
      this.push(this.#nextFrame());
    }
  }

  /** One 20 ms frame of the queue, or of silence. */
  #nextFrame(): Int16Array {
    const frame = new Int16Array(FRAME_SAMPLES);
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.#queue.length > 0) {
      const head = this.#queue[0]!;
      const n = Math.min(head.length, FRAME_SAMPLES - filled);
      frame.set(head.subarray(0, n), filled);
      filled += n;
      if (n === head.length) this.#queue.shift();
      else this.#queue[0] = head.subarray(n);
    }
    this.#queued -= filled;
    return frame;
  }

  #stop(): void {
    this.#over = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
