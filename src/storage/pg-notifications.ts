import { sql } from 'kysely';
import pg from 'pg';
import type { Executor } from './store.ts';

/** The channels of the notifications servers send each other. */
export type NotificationChannel =
  /** An ongoing call's row changed (update-call); payload: the call id. */
  | 'call_updates'
  /** An API key was revoked; payload: the key id. */
  | 'api_key_revocations'
  /** Webhook events were recorded (NOTIFYed in their transaction by WebhookRepository.notifyWorkers); wakes the delivery workers. */
  | 'switchboard_webhooks'
  /**
   * A knowledge base's sources changed (NOTIFYed by a trigger on knowledge_base_sources, migration
   * 0027, when the change commits); payload: the base id.
   */
  | 'knowledge_changes';

/** What a subscriber to a channel is told. */
export interface NotificationHandlers {
  /** A notification on the channel, with its payload. */
  onMessage(payload: string): void;
  /**
   * Notifications may have been missed (the LISTEN connection was lost and is back): catch up by
   * reading what the channel's notifications would have said.
   */
  onResync(): void;
  /** The LISTEN connection was lost: notifications may be missed from now until `onResync`. */
  onLost?(): void;
}

/**
 * Notifications between the servers of one store: PostgreSQL LISTEN/NOTIFY (PgNotifications),
 * or, on SQLite, whose one server is the only listener, within the process (LocalNotifications).
 */
export interface Notifications {
  subscribe(channel: NotificationChannel, handlers: NotificationHandlers): void;
  /** Tells every server (this one included) once `notify` resolves; call it after the change commits. */
  notify(channel: NotificationChannel, payload: string): Promise<void>;
  /** Starts listening (main.ts; the CLI and tests that only notify never do). */
  start(): Promise<void>;
  /** Stops listening; idempotent. */
  close(): Promise<void>;
}

/** Notifications within one process: the embedded store has one server. */
export class LocalNotifications implements Notifications {
  readonly #handlers = new Map<NotificationChannel, NotificationHandlers[]>();

  subscribe(channel: NotificationChannel, handlers: NotificationHandlers): void {
    this.#handlers.set(channel, [...(this.#handlers.get(channel) ?? []), handlers]);
  }

  notify(channel: NotificationChannel, payload: string): Promise<void> {
    for (const handlers of this.#handlers.get(channel) ?? []) handlers.onMessage(payload);
    return Promise.resolve();
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The application_name of the LISTEN connection (it shows in pg_stat_activity). */
export const LISTENER_APPLICATION_NAME = 'switchboard-notifications';
/** Reconnect delays after the LISTEN connection is lost, ms: doubling from the first to the last. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;

export interface PgNotificationsOptions {
  url: string;
  /** Sends NOTIFY (a query on the store's pool). */
  send: (channel: NotificationChannel, payload: string) => Promise<void>;
  /** Reports the connection's losses and returns (fields only, no PII). */
  log: { warn(fields: object, message: string): void; info(fields: object, message: string): void };
}

/**
 * LISTEN/NOTIFY over one connection of its own, for every subscribed channel. NOTIFY is delivered
 * only when the notifying transaction commits, so a notification means the change is visible.
 * When the connection is lost (the database restarted, a proxy or `pg_terminate_backend` cut it),
 * it reconnects with backoff, LISTENs again and calls every subscriber's `onResync`, since what
 * was notified meanwhile never arrives.
 */
export class PgNotifications implements Notifications {
  readonly #o: PgNotificationsOptions;
  readonly #handlers = new Map<NotificationChannel, NotificationHandlers[]>();
  #client: pg.Client | null = null;
  #started = false;
  #closed = false;
  #retryMs = RECONNECT_FIRST_MS;
  #retryTimer: NodeJS.Timeout | null = null;

  constructor(options: PgNotificationsOptions) {
    this.#o = options;
  }

  /**
   * Before `start`: a channel is LISTENed to at connect, so one first subscribed after `start`
   * would never be told while `listening` said otherwise (KnowledgeStamps relies on it): refused.
   */
  subscribe(channel: NotificationChannel, handlers: NotificationHandlers): void {
    if (this.#started && !this.#handlers.has(channel)) throw new Error(`subscribe to ${channel} before start: it would not be listened to`);
    this.#handlers.set(channel, [...(this.#handlers.get(channel) ?? []), handlers]);
  }

  notify(channel: NotificationChannel, payload: string): Promise<void> {
    return this.#o.send(channel, payload);
  }

  /**
   * True while the LISTEN connection is up (every subscribed channel listened to): a change
   * committed from now on is notified. False before `start`, after a loss until the reconnect,
   * and after `close`.
   */
  get listening(): boolean {
    return this.#client !== null;
  }

  /** Connects and LISTENs on every subscribed channel; rejects if the first connection fails. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#client = await this.#connect();
  }

  async #connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.#o.url, application_name: LISTENER_APPLICATION_NAME });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      client.removeAllListeners('notification');
      void client.end().catch(() => {});
      if (this.#client === client) this.#client = null;
      for (const list of this.#handlers.values()) for (const handlers of list) handlers.onLost?.();
      if (this.#closed) return;
      this.#o.log.warn({ err: error, retryMs: this.#retryMs }, 'notification connection lost; reconnecting');
      this.#scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      for (const handlers of this.#handlers.get(message.channel as NotificationChannel) ?? []) handlers.onMessage(message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (error) {
      lost = true;
      await client.end().catch(() => {});
      throw error;
    }
    return client;
  }

  #scheduleReconnect(): void {
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (this.#closed) return;
      this.#connect().then(
        (client) => {
          if (this.#closed) {
            void client.end().catch(() => {});
            return;
          }
          this.#client = client;
          this.#retryMs = RECONNECT_FIRST_MS;
          this.#o.log.info({}, 'notification connection restored; catching up');
          for (const list of this.#handlers.values()) for (const handlers of list) handlers.onResync();
        },
        (error: unknown) => {
          this.#retryMs = Math.min(RECONNECT_MAX_MS, this.#retryMs * 2);
          this.#o.log.warn({ err: error, retryMs: this.#retryMs }, 'notification connection failed; retrying');
          this.#scheduleReconnect();
        },
      );
    }, this.#retryMs);
    this.#retryTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }
}

/** PgNotificationsOptions.send over the store's pool: `select pg_notify(channel, payload)`. */
export function notifyThrough(db: Executor): PgNotificationsOptions['send'] {
  return async (channel, payload) => {
    await sql`select pg_notify(${channel}, ${payload})`.execute(db);
  };
}
