/** Which part of the speech stack failed; maps to the call's disconnection reason (`error_asr`, ...). `embeddings` (knowledge retrieval) never ends a call. */
export type ProviderKind = 'asr' | 'llm' | 'tts' | 'vad' | 'embeddings';

/**
 * The one error type of providers. `retryable` is a property of the failure (network errors,
 * 429 and 5xx), never a guess at the call site. Messages never contain user audio or text.
 */
export class ProviderError extends Error {
  readonly kind: ProviderKind;
  readonly provider: string;
  readonly retryable: boolean;
  /** HTTP status when the failure came from an HTTP answer. */
  readonly status: number | undefined;

  constructor(kind: ProviderKind, provider: string, message: string, opts: { retryable?: boolean; status?: number; cause?: unknown } = {}) {
    super(`${provider}: ${message}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProviderError';
    this.kind = kind;
    this.provider = provider;
    this.retryable = opts.retryable ?? false;
    this.status = opts.status;
  }
}

/** Whether an HTTP status is worth retrying (rate limit, timeout, server errors). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** True when `e` is an abort (the caller cancelled), which is never reported as a provider failure. */
export function isAbortError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'AbortError';
}
