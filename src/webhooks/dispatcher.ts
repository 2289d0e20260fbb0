import type { Store } from '../storage/store.ts';
import type { WebhookRepository } from '../storage/webhook.repository.ts';
import type { DeliveryPump } from './delivery-pump.ts';

export interface DispatcherOptions {
  /** The claim -> send -> record step: the worker runs a round of it on every wake, and closes it. */
  pump: DeliveryPump;
  store: Store;
  webhooks: WebhookRepository;
  /** How often to look for due deliveries without being woken, in milliseconds. */
  pollIntervalMs: number;
}

/** How the worker stops: see `WebhookDispatcher.close`. */
export interface DispatcherCloseOptions {
  /**
   * How long sends in flight may go on finishing, in milliseconds (default: no limit; each ends
   * within the attempt timeout anyway). Those still unanswered then are aborted and handed back.
   */
  graceMs?: number;
}

/**
 * The delivery worker: runs a round of its `DeliveryPump` (claim due deliveries, send, record)
 * whenever it is woken, at once by events recorded in this process (and, on PostgreSQL, by NOTIFY
 * from any process), and polls for due retries and anything else. Woken before `start` or after
 * `close`, it does nothing.
 */
export class WebhookDispatcher {
  readonly #o: DispatcherOptions;
  #running = false;
  #closed = false;
  #closing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: DispatcherOptions) {
    this.#o = options;
  }

  /** Starts the background loop; idempotent. */
  async start(): Promise<void> {
    if (this.#running || this.#closed) return;
    this.#running = true;
    // SQLite is single-process: leases left by a killed previous run are void now.
    if (this.#o.store.dialect === 'sqlite') await this.#o.webhooks.releaseAllLeases();
    this.#timer = setInterval(() => this.wake(), this.#o.pollIntervalMs);
    this.#timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (after an event was recorded, or a redelivery queued). */
  wake(): void {
    if (this.#closed || !this.#running) return;
    // The round's result is for callers who wait on it; the worker only keeps the pump going.
    void this.#o.pump.runOnce();
  }

  /**
   * Stops claiming and lets the sends in flight finish for up to `graceMs`; then aborts the rest.
   * An aborted send is not an attempt: nothing is recorded, and its delivery's lease is released,
   * so it stays pending and due (another worker, or the next start, sends it again, with the same
   * webhook-id). Attempts already answered are recorded before this resolves. Idempotent: later
   * calls return the first call's promise.
   */
  close(options: DispatcherCloseOptions = {}): Promise<void> {
    this.#closing ??= this.#close(options.graceMs ?? Infinity);
    return this.#closing;
  }

  async #close(graceMs: number): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#o.pump.close(graceMs);
  }
}
