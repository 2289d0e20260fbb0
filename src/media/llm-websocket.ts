import WebSocket from 'ws';
import type { LookupFunction } from 'node:net';
import type { LlmSocket, LlmSocketOpener } from '../voice/index.ts';
import { wsDataToBuffer } from '../lib/ws-data.ts';

/** Bounds of a custom LLM's socket (docs/custom-llm.md, "Limits"). */
export interface LlmSocketLimits {
  /** Longest wait for the connection and upgrade, ms; default 5000. */
  openTimeoutMs: number;
  /** Largest frame taken, bytes; a larger one ends the call `error_llm_websocket_corrupt_payload`. Default 65536. */
  maxFrameBytes: number;
  /** Most frames taken in one second; more ends the call `error_llm_websocket_corrupt_payload`. Default 200. */
  maxMessagesPerSecond: number;
  /**
   * Most bytes we may have queued for the server, unsent because it does not read them; beyond,
   * the connection counts as lost (`error_llm_websocket_lost_connection`, or a reconnection with
   * auto_reconnect). Default 1 MiB, over a hundred full transcripts.
   */
  maxBufferedBytes: number;
}

export const DEFAULT_LLM_SOCKET_LIMITS: LlmSocketLimits = { openTimeoutMs: 5_000, maxFrameBytes: 65_536, maxMessagesPerSecond: 200, maxBufferedBytes: 1_048_576 };

export interface LlmSocketDeps {
  /** The destination policy's lookup: every address a name resolves to is checked, and the one checked is connected to. */
  lookup: LookupFunction;
  /** The policy's verdict on an IP-literal host (connect skips `lookup` for those); null when allowed. */
  literalRefusal: (hostname: string) => string | null;
  /** The service's User-Agent. */
  userAgent: string;
  limits?: Partial<LlmSocketLimits>;
}

/**
 * Opens custom-LLM sockets (`ws`) under the webhook destination policy: SSRF checks on the address
 * connected to, WEBHOOK_ALLOWED_CIDRS, no redirects, an open timeout, a frame size limit and a
 * message rate limit. Text frames only; a binary frame is a corrupt payload.
 */
export function llmSocketOpener(deps: LlmSocketDeps): LlmSocketOpener {
  const limits = { ...DEFAULT_LLM_SOCKET_LIMITS, ...deps.limits };
  return (url, handlers) =>
    new Promise((resolve, reject) => {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        reject(new Error('the llm_websocket_url is not a URL'));
        return;
      }
      const refused = deps.literalRefusal(parsed.hostname);
      if (refused) {
        reject(new Error(`destination refused: ${refused}`));
        return;
      }
      const ws = new WebSocket(url, {
        lookup: deps.lookup,
        handshakeTimeout: limits.openTimeoutMs,
        maxPayload: limits.maxFrameBytes,
        followRedirects: false,
        perMessageDeflate: false,
        headers: { 'user-agent': deps.userAgent },
      });
      let open = false;
      let closedByUs = false;
      let windowStart = Date.now();
      let inWindow = 0;
      const end = (kind: 'lost' | 'runtime' | 'corrupt', detail: string) => {
        if (closedByUs) return;
        closedByUs = true;
        ws.terminate();
        handlers.onClose(kind, detail);
      };
      ws.on('open', () => {
        open = true;
        const socket: LlmSocket = {
          send: (text) => {
            if (closedByUs || ws.readyState !== WebSocket.OPEN) return;
            if (ws.bufferedAmount + Buffer.byteLength(text) > limits.maxBufferedBytes) {
              end('lost', `the server stopped reading: over ${limits.maxBufferedBytes} bytes unsent`);
              return;
            }
            ws.send(text);
          },
          close: () => {
            closedByUs = true;
            ws.close(1000);
          },
        };
        resolve(socket);
      });
      ws.on('message', (data, isBinary) => {
        if (closedByUs) return;
        const now = Date.now();
        if (now - windowStart >= 1_000) {
          windowStart = now;
          inWindow = 0;
        }
        if (++inWindow > limits.maxMessagesPerSecond) return end('corrupt', `more than ${limits.maxMessagesPerSecond} frames in a second`);
        if (isBinary) return end('corrupt', 'a binary frame');
        try {
          handlers.onMessage(wsDataToBuffer(data).toString('utf8'));
        } catch (error) {
          // The engine failed on what the server sent: the server's payload, never the process's end.
          end('corrupt', `a frame could not be handled (${error instanceof Error ? error.message : String(error)})`);
        }
      });
      ws.on('error', (error: Error & { code?: string }) => {
        if (!open) {
          reject(error);
          return;
        }
        if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') end('corrupt', `a frame larger than ${limits.maxFrameBytes} bytes`);
        else end('lost', error.message);
      });
      ws.on('unexpected-response', (_req, res) => {
        res.resume();
        ws.terminate();
        reject(new Error(`the server answered HTTP ${res.statusCode ?? 0} instead of upgrading`));
      });
      ws.on('close', (code, reason) => {
        if (!open) {
          reject(new Error(`closed before opening (${code})`));
          return;
        }
        if (closedByUs) return;
        const detail = `closed by the server (${code}${reason.length > 0 ? `: ${reason.toString('utf8').slice(0, 120)}` : ''})`;
        if (code === 1009) end('corrupt', `a frame larger than ${limits.maxFrameBytes} bytes`);
        else if (code === 1011 || (code >= 4000 && code <= 4999)) end('runtime', detail);
        else end('lost', detail);
      });
    });
}
