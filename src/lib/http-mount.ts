/**
 * Routes a transport serves on the app's HTTP server (a carrier's webhooks), without knowing the
 * HTTP framework: src/media/transport.ts hands transports an HttpMount, src/http/transport-routes.ts
 * mounts what they declared.
 */

/** A request to a route a transport serves (a carrier's webhook): its path and query, headers and raw body. */
export interface TransportRequest {
  /** The path and query string as requested (`/twilio/voice?call_id=...`). */
  url: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as text (form or JSON; the route's content types say which), at most 64 KiB. */
  body: string;
}

/** A route's answer. */
export interface TransportReply {
  status: number;
  contentType: string;
  body: string;
}

/**
 * POST routes a transport serves on the app's HTTP server, outside the API's key (a carrier signs
 * its own requests): bodies of `application/x-www-form-urlencoded` or JSON, read as text.
 */
export interface HttpMount {
  post(path: string, handler: (request: TransportRequest) => Promise<TransportReply>): void;
}
