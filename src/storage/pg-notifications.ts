import pg from 'pg';

export interface PgNotificationListenerOptions {
  /** The PostgreSQL URL to hold the LISTEN connection to (a connection of its own, outside the pool). */
  url: string;
  /** The channel to LISTEN on. */
  channel: string;
  /** Called on each notification on the channel (its payload is not used). */
  onNotification: () => void;
  /** Called when the connection fails after it was established; no more notifications arrive after that. */
  onError: (error: Error) => void;
}

/**
 * One PostgreSQL connection LISTENing on one channel. NOTIFY is delivered only when the notifying
 * transaction commits, so a notification means the change is visible. A lost connection is
 * reported once through `onError` and not reopened: callers poll as well.
 */
export class PgNotificationListener {
  readonly #client: pg.Client;
  #closing: Promise<void> | null = null;

  private constructor(client: pg.Client) {
    this.#client = client;
  }

  /** Connects and LISTENs; rejects (with the connection closed) if either fails. */
  static async listen(options: PgNotificationListenerOptions): Promise<PgNotificationListener> {
    const client = new pg.Client({ connectionString: options.url });
    client.on('error', options.onError);
    client.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotification();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(options.channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return new PgNotificationListener(client);
  }

  /** Closes the connection; idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#client.end().catch(() => {});
    return this.#closing;
  }
}
