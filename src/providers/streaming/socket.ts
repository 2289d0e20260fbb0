import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { isRetryableStatus, ProviderError, type ProviderKind } from '../errors.ts';

/** Largest message taken from a provider's socket, bytes (an audio chunk is a few tens of KB); larger ones fail it. */
export const MAX_PROVIDER_MESSAGE_BYTES = 4 * 1_048_576;

export interface SocketTarget {
  kind: ProviderKind;
  provider: string;
  url: URL;
  headers: Record<string, string>;
  /** Longest wait for the handshake, ms. */
  connectTimeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Opens a provider's WebSocket within `connectTimeoutMs`. A refused handshake fails with the
 * HTTP status (401/403: the key; 429 and 5xx retryable), an unreachable host retryable, an abort
 * with the signal's reason; the socket is dropped in every case but success.
 */
export async function openProviderSocket(target: SocketTarget): Promise<WebSocket> {
  const { kind, provider, signal } = target;
  signal?.throwIfAborted();
  const ws = new WebSocket(target.url, { headers: target.headers, maxPayload: MAX_PROVIDER_MESSAGE_BYTES, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    const onOpen = (): void => done();
    const onError = (e: Error): void => done(new ProviderError(kind, provider, 'connection failed', { retryable: true, cause: e }));
    const onRefused = (_req: unknown, res: IncomingMessage): void => {
      const status = res.statusCode ?? 0;
      res.resume();
      done(new ProviderError(kind, provider, `handshake refused (HTTP ${status}${status === 401 || status === 403 ? ': check the API key' : ''})`, { status, retryable: isRetryableStatus(status) }));
    };
    // The abort's own reason (an AbortError), as every provider rejects an aborted call.
    const onAbort = (): void => done(signal?.reason as Error);
    const timer = setTimeout(() => done(new ProviderError(kind, provider, `connection timed out after ${target.connectTimeoutMs} ms`, { retryable: true })), target.connectTimeoutMs);
    // Settles once; the handshake's listeners go either way, so the provider's own see what follows.
    const done = (error?: Error): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      ws.off('open', onOpen).off('error', onError).off('unexpected-response', onRefused);
      if (error === undefined) {
        resolve();
        return;
      }
      // Errors of the socket being dropped have no one left to hear them.
      ws.on('error', () => {});
      ws.terminate();
      reject(error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    ws.once('unexpected-response', onRefused);
    ws.once('open', onOpen);
    ws.once('error', onError);
  });
  return ws;
}

/**
 * The failure a socket closed by the server (before the stream's end) stands for: 1008 (policy:
 * a refused key, an exhausted quota, a bad request) is not worth retrying, anything else is.
 * The server's reason is kept, bounded; it carries no user text.
 */
export function closedFailure(kind: ProviderKind, provider: string, code: number, reason: Buffer): ProviderError {
  const why = reason.toString('utf8').slice(0, 200);
  return new ProviderError(kind, provider, `socket closed by the server (${code}${why ? `: ${why}` : ''})`, { retryable: code !== 1008 && code !== 1003 && code !== 1007 });
}
