/**
 * The RTP timestamps and marker bits of the agent's stream over WebRTC (RFC 3550 5.1, RFC 3551 4.1,
 * RFC 7587 4.1). The server sends audio only while the agent speaks: between replies no packet
 * goes. Within a talk spurt each 20 ms packet's timestamp follows the one before it; the first
 * packet after a silence carries the marker bit and a timestamp that has moved on by the time the
 * silence lasted, read from a monotonic clock, so the caller's jitter buffer sees the pause as a
 * pause. Timestamps that stood still across the pause (the sequence numbering alone) made every
 * reply's first packet look seconds late to Chromium's NetEq, which grew its delay target at each
 * reply (BENCHMARKS.md, issue 23's client-seen latency).
 */

/** A packet sent this long after the one before it starts a new talk spurt, ms (a pacing stall under load is shorter). */
export const SPURT_GAP_MS = 200;

export interface RtpStamp {
  timestamp: number;
  marker: boolean;
}

export class RtpSendClock {
  readonly #ticksPerMs: number;
  readonly #frameTicks: number;
  readonly #leadMs: number;
  /** The first packet's timestamp and send time (monotonic ms), once one was sent. */
  #origin: { timestamp: number; atMs: number } | null = null;
  /** The next packet's timestamp if it continues the spurt. */
  #next: number;
  #lastAtMs = -Infinity;

  /**
   * @param clockRate RTP clock, Hz (48 000 for Opus).
   * @param frameMs Audio per packet, ms.
   * @param initialTimestamp The first packet's timestamp (random, RFC 3550 5.1).
   * @param leadMs How far ahead of real time the sender's pacer sends, ms; default 0 (see `stamp`).
   */
  constructor(clockRate: number, frameMs: number, initialTimestamp: number, leadMs = 0) {
    this.#ticksPerMs = clockRate / 1000;
    this.#frameTicks = frameMs * this.#ticksPerMs;
    this.#leadMs = leadMs;
    this.#next = initialTimestamp >>> 0;
  }

  /**
   * The stamp of the packet sent at `nowMs` (monotonic): `spurt` when the sender knows a talk spurt
   * starts (a new reply, or after a barge-in cleared the last); a packet after SPURT_GAP_MS without
   * any is a new spurt too. A spurt's timestamp is the clock's, never behind the previous packet's
   * end. The pacer sends a spurt's first frame at once and the rest `leadMs` ahead of real time, so
   * a later spurt's first packet is stamped `leadMs` on from the clock: it then arrives as early
   * for its timestamp as the packets before it did, and the receiver's jitter buffer does not take
   * the pacer's start for `leadMs` of network delay at every reply.
   */
  stamp(nowMs: number, spurt: boolean): RtpStamp {
    const marker = spurt || nowMs - this.#lastAtMs >= SPURT_GAP_MS;
    this.#lastAtMs = nowMs;
    if (this.#origin === null) this.#origin = { timestamp: this.#next, atMs: nowMs };
    else if (marker) {
      const byClock = (this.#origin.timestamp + Math.round((nowMs - this.#origin.atMs + this.#leadMs) * this.#ticksPerMs)) >>> 0;
      // Signed 32-bit difference (timestamps wrap): the clock ahead of the sequence (a pause) moves the timestamp on.
      if (((byClock - this.#next) | 0) > 0) this.#next = byClock;
    }
    const timestamp = this.#next;
    this.#next = (this.#next + this.#frameTicks) >>> 0;
    return { timestamp, marker };
  }
}
