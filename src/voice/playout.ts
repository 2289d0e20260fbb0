/**
 * Where the agent's replies are played: livekit's AudioOutput shape. A reply is a segment: its
 * frames are pushed as they are synthesized (the queue is bounded, so synthesis waits), `finish`
 * says no more will come, `drained` resolves once all of it has been played (or cleared), and
 * `playedMs` says how much of it the caller has heard: what the endpoint reports where it can
 * (marks from a phone carrier, a loopback reader), else what real time has played of what was sent.
 * "What the caller heard" of a reply cut off comes from that position, not from what was sent.
 */
import type { Scheduler } from '../lib/scheduler.ts';
import { Channel } from './channel.ts';
import { FRAME_MS } from './frames.ts';

/** The agent's audio sink, as a reply sees it. */
export interface Playout {
  /** Queues one 20 ms frame of the segment; resolves once there is room (the queue is bounded). */
  push(frame: Int16Array): Promise<void>;
  /** The segment's last frame has been pushed: it ends once all of it has played. */
  finish(): void;
  /** Barge-in: drops every frame not sent yet, and ends the segment, interrupted. */
  clear(): void;
  /** Resolves once the segment has played out or was cleared. */
  drained(): Promise<void>;
  /** Ms of the segment the caller has heard so far. */
  playedMs(): number;
}

/** What the pacer tells its owner as the segment plays. */
export interface PacerEvents {
  /** The segment's first frame goes out now. */
  started(): void;
  /** One frame goes out (to the endpoint). */
  frame(pcm: Int16Array): void;
  /** The segment has played out (`interrupted` false) or was cleared while it played (true). */
  stopped(interrupted: boolean): void;
}

export interface PacerOptions {
  scheduler: Scheduler;
  events: PacerEvents;
  /** How far audio may run ahead of real time, ms (bounds the barge-in latency); default 80. */
  leadMs?: number;
  /** Frames queued ahead of playback before `push` waits; default 1500 (30 s). */
  capacity?: number;
  /** Run a 10 ms pacing timer on the scheduler; default true. Without it the owner calls `tick()` (lock-step). */
  timers?: boolean;
  /** The endpoint's played position of the current segment, ms, where it reports one (undefined: it cannot tell). */
  position?: () => number | undefined;
}

/**
 * The default playout: paces frames out at real time plus a small lead (the endpoint plays them
 * as they come), and estimates the played position from what real time has played of what it sent,
 * unless the endpoint reports its own. One segment at a time: `open()` starts the next.
 */
export class PacedPlayout implements Playout {
  readonly #s: Scheduler;
  readonly #events: PacerEvents;
  readonly #leadMs: number;
  readonly #position: (() => number | undefined) | undefined;
  readonly #queue: Channel<Int16Array>;
  readonly #timer: ReturnType<Scheduler['setInterval']> | undefined;
  #open = false;
  #finished = false;
  #speaking = false;
  #talkStart = 0;
  #sentMs = 0;
  #drained: (() => void) | undefined;
  #drainedP: Promise<void> = Promise.resolve();
  #closed = false;
  /** Out-of-band audio (a backchannel) played while no segment speaks, paced the same way. */
  #aside: readonly Int16Array[] = [];
  #asideAt = 0;
  #asideStart = 0;

  constructor(options: PacerOptions) {
    this.#s = options.scheduler;
    this.#events = options.events;
    this.#leadMs = options.leadMs ?? 80;
    this.#position = options.position;
    this.#queue = new Channel({ capacity: options.capacity ?? 1500, overflow: 'block' });
    if (options.timers ?? true) this.#timer = this.#s.setInterval(() => this.tick(), 10);
  }

  /** Starts a segment (a reply that now plays); the previous one has drained or was cleared. */
  open(): void {
    this.#open = true;
    this.#finished = false;
    this.#sentMs = 0;
    this.#drainedP = new Promise((resolve) => (this.#drained = resolve));
  }

  push(frame: Int16Array): Promise<void> {
    // A segment cleared (or not opened) takes nothing: a frame of a reply cut off never plays in the next.
    if (!this.#open) return Promise.resolve();
    const pushed = this.#queue.push(frame);
    this.tick();
    return pushed;
  }

  finish(): void {
    this.#finished = true;
    this.tick();
  }

  clear(): void {
    this.#queue.clear();
    if (this.#speaking) {
      this.#speaking = false;
      this.#events.stopped(true);
    }
    this.#end();
  }

  drained(): Promise<void> {
    return this.#drainedP;
  }

  /**
   * Plays `frames` out of band (a backchannel): paced like a segment, but with no `started` or
   * `stopped` event and no played position, only while no segment speaks. A segment whose audio
   * is ready while it plays starts after its last frame (never cutting the word); one already
   * playing wins, and `frames` are dropped. Returns whether it was taken.
   */
  aside(frames: readonly Int16Array[]): boolean {
    if (this.#closed || this.#speaking || this.asidePlaying) return false;
    this.#aside = frames;
    this.#asideAt = 0;
    this.#asideStart = this.#s.now();
    this.tick();
    return true;
  }

  /** Out-of-band audio is still being sent. */
  get asidePlaying(): boolean {
    return this.#asideAt < this.#aside.length;
  }

  /** Whether the current segment's audio has begun (and not ended). */
  get speaking(): boolean {
    return this.#speaking;
  }

  /** Ms of the segment sent to the endpoint so far. */
  sentMs(): number {
    return this.#sentMs;
  }

  playedMs(): number {
    const reported = this.#position?.();
    if (reported !== undefined) return Math.min(reported, this.#sentMs);
    if (!this.#speaking && this.#sentMs === 0) return 0;
    return Math.max(0, Math.min(this.#sentMs, this.#s.now() - this.#talkStart));
  }

  /**
   * The call ends while the segment plays: it stops where it is (`stopped(false)` if it was
   * speaking, as a goodbye cut short by the end is not a barge-in).
   */
  stop(): void {
    this.#aside = [];
    this.#asideAt = 0;
    if (this.#speaking) {
      this.#speaking = false;
      this.#events.stopped(false);
    }
  }

  /** Idempotent: stops the timer, drops what is queued and releases waiting pushes. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) this.#s.clear(this.#timer);
    this.#queue.close();
    this.#queue.clear();
    this.#aside = [];
    this.#end();
  }

  /** Sends frames up to real time + lead, and ends the segment once all of it has played. */
  tick(): void {
    if (this.#closed) return;
    this.#tickAside();
    if (!this.#open) return;
    const now = this.#s.now();
    if (!this.#speaking) {
      if (this.#queue.size === 0) {
        if (this.#finished) this.#end();
        return;
      }
      // A backchannel said in the pause that ended the turn is heard whole: the reply waits for
      // its last frame (at most BACKCHANNEL_MAX_CLIP_MS, and synthesis has used some of it).
      if (this.asidePlaying) return;
      this.#speaking = true;
      this.#talkStart = now;
      this.#sentMs = 0;
      this.#events.started();
      if (!this.#open) return; // a listener ended the segment
    }
    while (this.#sentMs < now - this.#talkStart + this.#leadMs) {
      const frame = this.#queue.tryShift();
      if (!frame) break;
      this.#sentMs += FRAME_MS;
      this.#events.frame(frame);
      if (!this.#speaking) return; // a listener cleared the segment or ended the call
    }
    if (this.#queue.size > 0) return;
    if (this.#finished) {
      // Wait for the last frame to be played out (by real time) before saying we stopped.
      if (now - this.#talkStart >= this.#sentMs - this.#leadMs) {
        this.#speaking = false;
        this.#events.stopped(false);
        this.#end();
      }
    } else {
      // Underrun (synthesis slower than playback): do not build up a debt to burst out later.
      this.#talkStart = Math.max(this.#talkStart, now - this.#sentMs);
    }
  }

  #tickAside(): void {
    if (this.#speaking) return;
    const until = this.#s.now() - this.#asideStart + this.#leadMs;
    while (this.#asideAt < this.#aside.length && this.#asideAt * FRAME_MS < until) {
      const frame = this.#aside[this.#asideAt++]!;
      this.#events.frame(frame);
      if (this.#closed || this.#speaking) return;
    }
    if (!this.asidePlaying) {
      this.#aside = [];
      this.#asideAt = 0;
    }
  }

  #end(): void {
    this.#open = false;
    const done = this.#drained;
    this.#drained = undefined;
    done?.();
  }
}
