/**
 * The RTP timestamps and marker bits of the agent's stream over WebRTC (RFC 3550 5.1, RFC 3551 4.1,
 * RFC 7587 4.1). The server sends audio only while the agent speaks: between replies no packet
 * goes. Within a talk spurt each 20 ms packet's timestamp follows the one before it; the first
 * packet after a silence carries the marker bit and a timestamp that has moved on by the time the
 * silence lasted, read from a monotonic clock, so the caller's jitter buffer sees the pause as a
 * pause. Timestamps that stood still across the pause (the sequence numbering alone) made every
 * reply's first packet look seconds late to Chromium's NetEq, which grew its delay target at each
 * reply (BENCHMARKS.md, issue 23's client-seen latency).
 *
 * After a long pause the timestamp moves on by a little less than the pause (CATCH_UP_MS less):
 * the reply's first packet then arrives "late" for its timestamp, and the receiver plays it as
 * soon as it has it. Moved on by the whole pause, NetEq (libwebrtc's jitter buffer) holds the
 * packet back until its timestamp is due by the previous reply's playout clock, that is for as long
 * as the previous reply's packets waited in its buffer (the delay its target grew to, less the
 * pacer's lead): 30 ms on a quiet machine, 100-250 ms under load, at the start of every reply.
 * NetEq keeps 2 s of RTP time of arrivals (RECEIVER_HISTORY_MS) to measure the network's delay; a
 * pause longer than that plus the catch-up leaves none of the previous reply's packets in it, so
 * the reply's packets are measured against each other only and the catch-up cannot read as
 * network delay (which would raise the receiver's target). A shorter pause moves the timestamp on
 * by the whole pause, as before.
 */

/** A packet sent this long after the one before it starts a new talk spurt, ms (a pacing stall under load is shorter). */
export const SPURT_GAP_MS = 200;

/**
 * How much of a long pause the timestamps leave out, at most, ms: more than the delay a receiver's
 * buffer holds at a reply's end on a busy machine (BENCHMARKS.md, issue 23, "a reply's first
 * packet"), less than RFC 3550's interarrival jitter should carry for long (it moves by a sixteenth
 * of this at a reply's start and decays within the reply).
 */
export const CATCH_UP_MS = 250;
/** The RTP time a receiver keeps packets' arrivals over, ms: libwebrtc NetEq's packet arrival history (kPacketHistorySizeMs). */
export const RECEIVER_HISTORY_MS = 2000;

export interface RtpStamp {
  timestamp: number;
  marker: boolean;
}

export class RtpSendClock {
  readonly #ticksPerMs: number;
  readonly #frameTicks: number;
  readonly #leadMs: number;
  readonly #catchUpTicks: number;
  readonly #historyTicks: number;
  /** The first packet's timestamp and send time (monotonic ms), once one was sent. */
  #origin: { timestamp: number; atMs: number } | null = null;
  /** Ticks of pause the timestamps have left out so far (the catch-ups). */
  #leftOut = 0;
  /** The next packet's timestamp if it continues the spurt. */
  #next: number;
  #lastAtMs = -Infinity;

  /**
   * @param clockRate RTP clock, Hz (48 000 for Opus).
   * @param frameMs Audio per packet, ms.
   * @param initialTimestamp The first packet's timestamp (random, RFC 3550 5.1).
   * @param leadMs How far ahead of real time the sender's pacer sends, ms; default 0 (see `stamp`).
   * @param catchUpMs How much of a pause longer than RECEIVER_HISTORY_MS the timestamps leave out, at most, ms; default 0 (none).
   */
  constructor(clockRate: number, frameMs: number, initialTimestamp: number, leadMs = 0, catchUpMs = 0) {
    this.#ticksPerMs = clockRate / 1000;
    this.#catchUpTicks = Math.round(catchUpMs * this.#ticksPerMs);
    this.#historyTicks = RECEIVER_HISTORY_MS * this.#ticksPerMs;
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
   * the pacer's start for `leadMs` of network delay at every reply. After a pause longer than
   * RECEIVER_HISTORY_MS the timestamp moves on by up to `catchUpMs` less than the clock says, so
   * that the receiver plays the spurt as soon as it has it (see the top of this file).
   */
  stamp(nowMs: number, spurt: boolean): RtpStamp {
    const marker = spurt || nowMs - this.#lastAtMs >= SPURT_GAP_MS;
    this.#lastAtMs = nowMs;
    if (this.#origin === null) this.#origin = { timestamp: this.#next, atMs: nowMs };
    else if (marker) {
      const byClock = (this.#origin.timestamp + Math.round((nowMs - this.#origin.atMs + this.#leadMs) * this.#ticksPerMs) - this.#leftOut) >>> 0;
      // Signed 32-bit difference (timestamps wrap): the clock ahead of the sequence (a pause) moves the timestamp on.
      const pause = (byClock - this.#next) | 0;
      if (pause > 0) {
        const catchUp = Math.min(this.#catchUpTicks, Math.max(0, pause - this.#historyTicks));
        this.#leftOut += catchUp;
        this.#next = (byClock - catchUp) >>> 0;
      }
    }
    const timestamp = this.#next;
    this.#next = (this.#next + this.#frameTicks) >>> 0;
    return { timestamp, marker };
  }
}
