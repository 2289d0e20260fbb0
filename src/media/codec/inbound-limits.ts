import { PROTOCOL_SAMPLE_RATE } from '../../protocol/media.constants.ts';

/** A rate with a burst allowance: `perSecond` units per second, up to `burst` units at once. */
export interface Rate {
  readonly perSecond: number;
  readonly burst: number;
}

/**
 * What one call's connection may send after its join (docs/media-protocol.md, "Limits"). Each
 * kind has an admitted rate: beyond it, input is dropped (and counted); and a flood rate of twice
 * that with four times the burst: beyond it, the client is cut off. A real-time client stays far
 * inside both: it sends audio at exactly 1x, 50 messages a second (20 ms frames), a ping every
 * few seconds, and after a stall of the network or of either event loop it catches up with a
 * burst no longer than the stall.
 */
export interface InboundLimitRates {
  /** Audio samples: real time (16 000/s), with a 1 s burst for jitter and catch-up after a stall. */
  readonly audioSamples: Rate;
  /** Messages of any kind: 100/s (10 ms frames), burst 100. */
  readonly messages: Rate;
  /** Text (JSON) messages: 10/s, burst 20; each may get an answer (pong, bad_message), so they are held lower. */
  readonly textMessages: Rate;
}

/** The limits every connection gets. */
export const INBOUND_LIMITS: InboundLimitRates = {
  audioSamples: { perSecond: PROTOCOL_SAMPLE_RATE, burst: PROTOCOL_SAMPLE_RATE },
  messages: { perSecond: 100, burst: 100 },
  textMessages: { perSecond: 10, burst: 20 },
};

/** Input above the admitted rate by this factor, sustained past this many bursts, cuts the client off. */
const FLOOD_RATE_FACTOR = 2;
const FLOOD_BURST_FACTOR = 4;

/** Largest text message parsed, bytes: a `join` with the longest token fits several times over. */
export const MAX_TEXT_MESSAGE_BYTES = 8_192;

/**
 * One token bucket on a monotonic clock: holds up to `burst` tokens (full at creation) and
 * regains `perSecond` tokens a second, continuously.
 */
class Bucket {
  readonly #rate: Rate;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(rate: Rate, now: () => number) {
    this.#rate = rate;
    this.#now = now;
    this.#tokens = rate.burst;
    this.#at = now();
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.#rate.burst, this.#tokens + (Math.max(0, now - this.#at) * this.#rate.perSecond) / 1000);
    this.#at = now;
  }

  /** Takes `n` tokens if they are all there; false (and takes none) otherwise. */
  takeAll(n: number): boolean {
    this.#refill();
    if (this.#tokens < n) return false;
    this.#tokens -= n;
    return true;
  }

  /** Takes up to `n` whole tokens; returns how many it took. */
  takeUpTo(n: number): number {
    this.#refill();
    const taken = Math.min(n, Math.floor(this.#tokens));
    this.#tokens -= taken;
    return taken;
  }
}

/** An admission limit and the flood limit above it, for one kind of input. */
class Limit {
  readonly admitted: Bucket;
  readonly flood: Bucket;
  constructor(rate: Rate, now: () => number) {
    this.admitted = new Bucket(rate, now);
    this.flood = new Bucket({ perSecond: rate.perSecond * FLOOD_RATE_FACTOR, burst: rate.burst * FLOOD_BURST_FACTOR }, now);
  }
}

/** The verdict on one binary message: how many of its samples go on, or that the client floods. */
export type AudioVerdict = { kind: 'admit'; samples: number; droppedSamples: number; messageDropped: boolean } | { kind: 'flood' };

/** The verdict on one text message. */
export type TextVerdict = 'admit' | 'drop' | 'flood';

/**
 * The inbound limits of one connection (INBOUND_LIMITS): admits audio at real time and messages
 * at their rates, tells what to drop, and tells when the client sends far faster than that and
 * must be cut off. Pure arithmetic on an injected monotonic clock (ms).
 */
export class InboundLimiter {
  readonly #audio: Limit;
  readonly #messages: Limit;
  readonly #text: Limit;

  constructor(now: () => number, rates: InboundLimitRates = INBOUND_LIMITS) {
    this.#audio = new Limit(rates.audioSamples, now);
    this.#messages = new Limit(rates.messages, now);
    this.#text = new Limit(rates.textMessages, now);
  }

  /** A binary message of `samples` samples: how many of them (the first ones) to admit. */
  audio(samples: number): AudioVerdict {
    if (!this.#messages.flood.takeAll(1) || !this.#audio.flood.takeAll(samples)) return { kind: 'flood' };
    if (!this.#messages.admitted.takeAll(1)) return { kind: 'admit', samples: 0, droppedSamples: samples, messageDropped: true };
    const admitted = this.#audio.admitted.takeUpTo(samples);
    return { kind: 'admit', samples: admitted, droppedSamples: samples - admitted, messageDropped: false };
  }

  /** A text message: admit it, drop it unanswered, or cut the client off. */
  text(): TextVerdict {
    if (!this.#messages.flood.takeAll(1) || !this.#text.flood.takeAll(1)) return 'flood';
    if (!this.#messages.admitted.takeAll(1)) return 'drop';
    return this.#text.admitted.takeAll(1) ? 'admit' : 'drop';
  }
}
