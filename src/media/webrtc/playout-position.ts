/**
 * Where the caller is in the agent's reply over WebRTC: what it has heard, not what was sent. RTP
 * cannot be recalled once sent, and the caller's jitter buffer holds each packet a while before it
 * plays, so the position is each frame's estimated playout: a frame plays `delayMs` after it was
 * sent, or right after the frame before it if that one is still playing then (a receiver plays a
 * stream in order, without gaps while it has audio). What the transcript keeps of a reply cut off is
 * read from here (CallEndpoint.playedMs), so it is the text the caller heard.
 */

/** The caller's playout delay when no receiver report has come: Chrome's NetEq holds one to three 20 ms packets on a clean network, and the audio device adds about 10-20 ms, ms. */
export const PLAYOUT_BASE_DELAY_MS = 60;
/** The estimate never exceeds this, whatever the caller reports (a jitter buffer beyond it is a stalled caller), ms. */
export const PLAYOUT_MAX_DELAY_MS = 300;

/**
 * The caller's playout delay for a reported interarrival jitter (RFC 3550, 6.4.1: what the caller's
 * receiver report says of our stream, ms): the base plus twice the jitter, as an adaptive jitter
 * buffer keeps about two jitters of audio above its minimum.
 */
export function playoutDelayMs(reportedJitterMs: number | null): number {
  const jitter = reportedJitterMs !== null && Number.isFinite(reportedJitterMs) ? Math.max(0, reportedJitterMs) : 0;
  return Math.min(PLAYOUT_MAX_DELAY_MS, PLAYOUT_BASE_DELAY_MS + 2 * jitter);
}

/**
 * One reply's played position, from the times its frames were sent. Runs of contiguous playout are
 * kept only until they have played (folded into a sum), so its memory is bounded by what is in
 * flight, whatever the reply's length.
 */
export class PlayoutPosition {
  /** Ms of the runs already played through. */
  #heardBefore = 0;
  /** Runs still playing or to play: each starts at `startMs` (monotonic) and lasts `ms`. */
  readonly #runs: Array<{ startMs: number; ms: number }> = [];

  /** A new reply begins: nothing of it has been heard. */
  reset(): void {
    this.#heardBefore = 0;
    this.#runs.length = 0;
  }

  /** A frame of `frameMs` was sent at `atMs`; the caller plays it `delayMs` later at the earliest. */
  sent(atMs: number, frameMs: number, delayMs: number): void {
    const startMs = atMs + delayMs;
    const last = this.#runs.at(-1);
    if (last && startMs <= last.startMs + last.ms) last.ms += frameMs;
    else this.#runs.push({ startMs, ms: frameMs });
  }

  /** Ms of the reply the caller has heard by `nowMs`. */
  heardMs(nowMs: number): number {
    let first = this.#runs[0];
    while (first && first.startMs + first.ms <= nowMs) {
      this.#heardBefore += first.ms;
      this.#runs.shift();
      first = this.#runs[0];
    }
    return this.#heardBefore + (first ? Math.min(first.ms, Math.max(0, nowMs - first.startMs)) : 0);
  }
}
