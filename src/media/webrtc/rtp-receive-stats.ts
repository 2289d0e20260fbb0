/**
 * What the caller's RTP stream did on the way in, as RFC 3550 counts it (section 6.4.1 and
 * appendix A.1/A.8): packets and bytes received, packets lost (expected from the extended
 * sequence numbers, less received; duplicates may make it negative, so it is floored at 0), and
 * the interarrival jitter, smoothed by 1/16 on every packet, in RTP ticks.
 */
export class RtpReceiveStats {
  readonly #clockRate: number;
  packets = 0;
  bytes = 0;
  #baseSeq = -1;
  #maxSeq = 0;
  #cycles = 0;
  #jitterTicks = 0;
  #lastTransit: number | null = null;

  /** `clockRate`: RTP ticks a second (48 000 for Opus). */
  constructor(clockRate: number) {
    this.#clockRate = clockRate;
  }

  /**
   * Counts one packet; `arrivalMs` is a monotonic clock. Returns how many packets were missing
   * just before this one (0 when in order; a late or duplicate packet returns -1).
   */
  record(sequenceNumber: number, rtpTimestamp: number, payloadBytes: number, arrivalMs: number): number {
    this.packets += 1;
    this.bytes += payloadBytes;
    const transit = (arrivalMs * this.#clockRate) / 1000 - rtpTimestamp;
    if (this.#lastTransit !== null) {
      // Timestamps wrap at 2^32; the difference of two transits stays small.
      let d = Math.abs(transit - this.#lastTransit);
      if (d > 2 ** 31) d = Math.abs(d - 2 ** 32);
      this.#jitterTicks += (d - this.#jitterTicks) / 16;
    }
    this.#lastTransit = transit;
    if (this.#baseSeq < 0) {
      this.#baseSeq = sequenceNumber;
      this.#maxSeq = sequenceNumber;
      return 0;
    }
    const delta = (sequenceNumber - this.#maxSeq + 65_536) % 65_536;
    if (delta === 0 || delta >= 32_768) return -1; // duplicate or late (reordered)
    if (sequenceNumber < this.#maxSeq) this.#cycles += 65_536;
    this.#maxSeq = sequenceNumber;
    return delta - 1;
  }

  /** Packets expected but never received so far (RFC 3550 A.3). */
  get lost(): number {
    if (this.#baseSeq < 0) return 0;
    const expected = this.#cycles + this.#maxSeq - this.#baseSeq + 1;
    return Math.max(0, expected - this.packets);
  }

  /** The interarrival jitter, ms. */
  get jitterMs(): number {
    return (this.#jitterTicks * 1000) / this.#clockRate;
  }
}
