import { ProviderError, type ProviderKind } from '../errors.ts';

/** Audio a queue holds before the consumer takes it, samples; default 60 s at 16 kHz. */
const DEFAULT_MAX_BUFFERED_SAMPLES = 960_000;

export interface AudioQueueOptions {
  kind: ProviderKind;
  provider: string;
  /** Longest wait for the next chunk (or the end) while the consumer waits, ms. */
  idleTimeoutMs: number;
  /** Samples held unread before the stream fails; default 960 000 (60 s at 16 kHz). */
  maxBufferedSamples?: number;
}

/**
 * The audio of one streamed synthesis, pushed by a socket's events and pulled by the pipeline:
 * bounded (a stream that outruns its reader by more than `maxBufferedSamples` fails rather than
 * grow memory), timed (no chunk for `idleTimeoutMs` while the reader waits fails it, retryable),
 * and abortable (the reader's signal ends the wait with the signal's reason).
 */
export class AudioQueue {
  readonly #o: AudioQueueOptions;
  readonly #chunks: Int16Array[] = [];
  #buffered = 0;
  #ended = false;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(options: AudioQueueOptions) {
    this.#o = options;
  }

  /** Whether end() or fail() was called: later events of the socket are ignored. */
  get settled(): boolean {
    return this.#ended || this.#failure !== undefined;
  }

  push(pcm: Int16Array): void {
    if (this.settled || pcm.length === 0) return;
    this.#buffered += pcm.length;
    if (this.#buffered > (this.#o.maxBufferedSamples ?? DEFAULT_MAX_BUFFERED_SAMPLES)) {
      this.fail(new ProviderError(this.#o.kind, this.#o.provider, 'more audio than the reader takes: stream dropped'));
      return;
    }
    this.#chunks.push(pcm);
    this.#notify();
  }

  /** The stream is complete; chunks already pushed are still read. */
  end(): void {
    if (this.settled) return;
    this.#ended = true;
    this.#notify();
  }

  /** The stream failed: the reader gets `error` at once; chunks not yet read are dropped. */
  fail(error: Error): void {
    if (this.settled) return;
    this.#failure = error;
    this.#chunks.length = 0;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** The chunks in order until the end; throws the failure, the signal's reason, or a timeout. */
  async *read(signal?: AbortSignal): AsyncGenerator<Int16Array> {
    for (;;) {
      signal?.throwIfAborted();
      if (this.#failure !== undefined) throw this.#failure;
      const next = this.#chunks.shift();
      if (next) {
        this.#buffered -= next.length;
        yield next;
        continue;
      }
      if (this.#ended) return;
      await this.#waitForMore(signal);
    }
  }

  #waitForMore(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(() => {
        this.fail(new ProviderError(this.#o.kind, this.#o.provider, `no audio for ${this.#o.idleTimeoutMs} ms`, { retryable: true }));
        done();
      }, this.#o.idleTimeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }
}

/**
 * Little-endian 16-bit samples from base64 audio, a byte split across chunks carried over in
 * `carry` (returned with the samples).
 */
export function pcmFromBase64(base64: string, carry: Buffer): { samples: Int16Array; carry: Buffer } {
  const decoded = Buffer.from(base64, 'base64');
  const bytes = carry.length ? Buffer.concat([carry, decoded]) : decoded;
  const even = bytes.length & ~1;
  const samples = new Int16Array(even / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
  return { samples, carry: Buffer.from(bytes.subarray(even)) };
}
