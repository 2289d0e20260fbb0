import type { Clock } from '../lib/clock.ts';
import { ProviderError } from './errors.ts';
import type { SttOpenOptions, SttProvider, SttStream } from './stt.ts';

/** The recogniser's room when a reservation was refused: streams open plus calls holding room, and the most it takes. */
export interface RecogniserRoom {
  open: number;
  max: number;
}

/**
 * A bounded recogniser (SttProvider.capacity: the embedded one, POCKETSPHINX_MAX_STREAMS) with
 * room held for calls that were admitted but have not joined yet (issue 25). A call created
 * while there is room reserves one stream until it joins (its stream opens through `forCall`),
 * its join window ends (`untilMs`: the access token's expiry, or ADMITTED_JOIN_WINDOW_MS for a
 * call that joins at once), or it is released (the call ended or was deleted). Every other stream
 * (agent tests, a call created on another server) opens only while streams open plus reservations
 * leave room, so a call that was admitted is never refused at its join.
 *
 * The room is this process's: servers sharing PostgreSQL each hold their own recogniser and their
 * own reservations (docs/deploy.md, "Embedded recogniser capacity"). Checks and the inner
 * provider's own admission run in one synchronous step, so concurrent requests cannot both take
 * the last stream. A recogniser without a bound reserves nothing and refuses nothing.
 */
export class ReservedStt implements SttProvider {
  readonly #inner: SttProvider;
  readonly #clock: Clock;
  /** Call id -> end of its join window, epoch ms. */
  readonly #held = new Map<string, number>();

  constructor(inner: SttProvider, clock: Clock) {
    this.#inner = inner;
    this.#clock = clock;
  }

  get id(): string {
    return this.#inner.id;
  }

  get capabilities(): SttProvider['capabilities'] {
    return this.#inner.capabilities;
  }

  languages(): readonly string[] {
    return this.#inner.languages();
  }

  warm(): void {
    this.#inner.warm?.();
  }

  async close(): Promise<void> {
    this.#held.clear();
    await this.#inner.close?.();
  }

  /** Streams open plus calls holding room, and the most the recogniser takes; undefined: no bound. */
  capacity(): RecogniserRoom | undefined {
    const inner = this.#inner.capacity?.();
    return inner && { open: inner.open + this.reserved(), max: inner.max };
  }

  /** Whether streams open plus rooms held fill the recogniser (a carrier's webhook answers busy then). */
  full(): boolean {
    const room = this.capacity();
    return room !== undefined && room.open >= room.max;
  }

  /** Calls holding room now (their join windows not yet over). */
  reserved(): number {
    const now = this.#clock.now();
    for (const [callId, untilMs] of this.#held) if (untilMs <= now) this.#held.delete(callId);
    return this.#held.size;
  }

  /**
   * Holds one stream for `callId` until `untilMs` (epoch ms); returns the room when there is none
   * (nothing held then), undefined once held or when the recogniser has no bound.
   */
  reserve(callId: string, untilMs: number): RecogniserRoom | undefined {
    const room = this.capacity();
    if (!room || this.#held.has(callId)) return undefined;
    if (room.open >= room.max) return room;
    this.#held.set(callId, untilMs);
    return undefined;
  }

  /** Gives `callId`'s room back (its join failed, it ended, it was deleted); idempotent. */
  release(callId: string): void {
    this.#held.delete(callId);
  }

  /** A stream without a reservation: refused (retryable) while reservations take the room left. */
  openStream(options?: SttOpenOptions): Promise<SttStream> {
    const room = this.capacity();
    if (room && room.open >= room.max) {
      return Promise.reject(
        new ProviderError('asr', this.#inner.id, `at capacity: ${room.max} recognition streams are open or held for calls about to join (POCKETSPHINX_MAX_STREAMS)`, { retryable: true }),
      );
    }
    return this.#inner.openStream(options);
  }

  /** The recogniser as `callId`'s session sees it: its stream takes the room held for it, if any. */
  forCall(callId: string): SttProvider {
    const inner = this.#inner;
    return {
      // Getters: what the inner provider says when asked (PocketSphinx's capabilities follow its mode).
      get id() {
        return inner.id;
      },
      get capabilities() {
        return inner.capabilities;
      },
      languages: () => inner.languages(),
      capacity: () => this.capacity(),
      openStream: (options?: SttOpenOptions) => this.#openHeld(callId, options),
    };
  }

  #openHeld(callId: string, options: SttOpenOptions | undefined): Promise<SttStream> {
    const held = this.#held.get(callId);
    this.#held.delete(callId);
    // Within its window the room held is this stream's: the inner provider admits it, its own
    // count staying below its bound while reservations are counted beside it.
    if (held !== undefined && held > this.#clock.now()) return this.#inner.openStream(options);
    return this.openStream(options);
  }
}
