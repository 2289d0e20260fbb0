import { ProviderError, isRetryableStatus, type ProviderKind } from '../errors.ts';

/** Connection settings of an OpenAI-compatible endpoint. */
export interface OpenAiEndpoint {
  /** Base URL including the version prefix, e.g. 'https://api.openai.com/v1' or 'http://127.0.0.1:8080/v1'. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string;
  /** Per-request timeout until response headers, ms; default 15 000. */
  timeoutMs?: number;
  /** Attempts on retryable failures (network, 408/409/429/5xx) before giving up; default 2. */
  maxRetries?: number;
}

/**
 * POSTs to `${baseUrl}${path}` and returns the response once headers arrive, retrying retryable
 * failures with exponential backoff and full jitter (250 ms base). The body is never logged.
 */
export async function post(
  kind: ProviderKind,
  provider: string,
  ep: OpenAiEndpoint,
  path: string,
  body: BodyInit,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<Response> {
  const url = ep.baseUrl.replace(/\/+$/, '') + path;
  const maxRetries = ep.maxRetries ?? 2;
  for (let attempt = 0; ; attempt++) {
    const timeout = AbortSignal.timeout(ep.timeoutMs ?? 15_000);
    const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let res: Response | undefined;
    let failure: ProviderError;
    try {
      res = await fetch(url, {
        method: 'POST',
        body,
        headers: { ...headers, ...(ep.apiKey ? { authorization: `Bearer ${ep.apiKey}` } : {}) },
        signal: s,
      });
      if (res.ok) return res;
      // An error's body is read for its first bytes only: a server may answer with gigabytes.
      const detail = (await readBounded(res, ERROR_BODY_BYTES, s, true).then((b) => b.toString('utf8')).catch(() => '')).slice(0, 200).replace(/\s+/g, ' ');
      failure = new ProviderError(kind, provider, `HTTP ${res.status}${detail ? `: ${detail}` : ''}`, {
        status: res.status,
        retryable: isRetryableStatus(res.status),
      });
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      failure = new ProviderError(kind, provider, timeout.aborted ? 'request timed out' : 'request failed', { retryable: true, cause: e });
    }
    if (!failure.retryable || attempt >= maxRetries) throw failure;
    const delay = Math.random() * 250 * 2 ** attempt;
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** Bytes of an error answer read for its message. */
const ERROR_BODY_BYTES = 4_096;
/** Longest server-sent event taken, characters: a larger one (or a stream with no event boundary) is a broken answer. */
export const MAX_SSE_EVENT_CHARS = 1_048_576;

/**
 * Reads a response body up to `maxBytes`. Beyond, it throws a ProviderError (`kind` of the
 * caller's) unless `truncate`, which returns the first `maxBytes`; either way the rest is not read.
 */
export async function readBounded(res: Response, maxBytes: number, signal?: AbortSignal, truncate = false, kind: ProviderKind = 'llm', provider = 'openai'): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { value, done } = await reader.read();
      if (done) break;
      size += value.byteLength;
      chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      if (size > maxBytes) {
        if (truncate) break;
        throw new ProviderError(kind, provider, `answer larger than ${maxBytes} bytes`);
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}

/** Reads `data:` payloads of a server-sent-events body, one per event; an event over `maxEventChars` throws. */
export async function* sseData(body: ReadableStream<Uint8Array>, signal?: AbortSignal, maxEventChars = MAX_SSE_EVENT_CHARS): AsyncIterable<string> {
  const decoder = new TextDecoder();
  let buf = '';
  const reader = body.getReader();
  try {
    for (;;) {
      if (signal?.aborted) return;
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      if (buf.length > maxEventChars && buf.search(/\r?\n\r?\n/) < 0) throw new ProviderError('llm', 'openai', `a stream event longer than ${maxEventChars} characters`);
      for (let i = buf.search(/\r?\n\r?\n/); i >= 0; i = buf.search(/\r?\n\r?\n/)) {
        const event = buf.slice(0, i);
        buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
        const data = event
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data) yield data;
      }
    }
    const tail = buf.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
    if (tail) yield tail;
  } finally {
    await reader.cancel().catch(() => {});
  }
}
