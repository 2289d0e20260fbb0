import WebSocket from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import type { SttProvider, SttResult, SttStream } from '../stt.ts';
import { ProviderError } from '../errors.ts';

export interface DeepgramOptions {
  /** WebSocket URL of the listen endpoint; default 'wss://api.deepgram.com/v1/listen'. */
  url?: string;
  /** Sent as `Authorization: Token <apiKey>`. */
  apiKey?: string;
  /** e.g. 'nova-2'; optional. */
  model?: string;
  language?: string;
  /** How long finalize() waits for the answer to Finalize, ms; default 3 000. */
  finalizeTimeoutMs?: number;
  /** Connection timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** Audio buffered while the socket is not writable before the oldest is dropped, bytes; default 320 000 (10 s). */
  maxBufferedBytes?: number;
}

interface ResultsMessage {
  type?: string;
  is_final?: boolean;
  speech_final?: boolean;
  from_finalize?: boolean;
  channel?: { alternatives?: Array<{ transcript?: string }> };
}

/**
 * Deepgram-style streaming recognition: one WebSocket per call, binary linear16 16 kHz audio up,
 * JSON `Results` down. Final segments (`is_final`) accumulate into the current utterance;
 * finalize() sends `{"type":"Finalize"}` and waits for the result marked `from_finalize`
 * (or a timeout), then returns everything final since the last finalize().
 */
export class DeepgramStt implements SttProvider {
  readonly id = 'deepgram';
  readonly #o: DeepgramOptions;

  constructor(options: DeepgramOptions = {}) {
    this.#o = options;
  }

  async openStream(): Promise<SttStream> {
    const url = new URL(this.#o.url ?? 'wss://api.deepgram.com/v1/listen');
    url.searchParams.set('encoding', 'linear16');
    url.searchParams.set('sample_rate', '16000');
    url.searchParams.set('channels', '1');
    url.searchParams.set('interim_results', 'true');
    if (this.#o.model) url.searchParams.set('model', this.#o.model);
    if (this.#o.language) url.searchParams.set('language', this.#o.language);
    const ws = new WebSocket(url, { headers: this.#o.apiKey ? { authorization: `Token ${this.#o.apiKey}` } : {} });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        ws.terminate();
        reject(new ProviderError('asr', this.id, 'connection timed out', { retryable: true }));
      }, this.#o.connectTimeoutMs ?? 5000);
      ws.once('open', () => {
        clearTimeout(t);
        resolve();
      });
      ws.once('error', (e) => {
        clearTimeout(t);
        reject(new ProviderError('asr', this.id, 'connection failed', { retryable: true, cause: e }));
      });
    });
    return new DeepgramStream(ws, this.#o);
  }
}

class DeepgramStream implements SttStream {
  readonly #ws: WebSocket;
  readonly #o: DeepgramOptions;
  #finals: string[] = [];
  #waiter: ((r: SttResult | Error) => void) | undefined;
  #failure: Error | undefined;
  #closed = false;
  #keepAlive: ReturnType<typeof setInterval>;

  constructor(ws: WebSocket, o: DeepgramOptions) {
    this.#ws = ws;
    this.#o = o;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let m: ResultsMessage;
      try {
        m = JSON.parse(wsDataToBuffer(data).toString('utf8')) as ResultsMessage;
      } catch {
        return;
      }
      if (m.type !== 'Results') return;
      const text = m.channel?.alternatives?.[0]?.transcript?.trim() ?? '';
      if (m.is_final && text) this.#finals.push(text);
      if (m.from_finalize && this.#waiter) this.#resolve();
    });
    const fail = (why: string) => (e?: unknown) => {
      this.#failure ??= new ProviderError('asr', 'deepgram', why, { retryable: true, cause: e });
      this.#waiter?.(this.#failure);
      this.#waiter = undefined;
    };
    ws.on('error', fail('socket error'));
    ws.on('close', fail('socket closed'));
    // Deepgram closes idle sockets after ~10 s without audio; KeepAlive holds the line.
    this.#keepAlive = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'KeepAlive' }));
    }, 5000);
    this.#keepAlive.unref();
  }

  #resolve(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    const text = this.#finals.join(' ').trim();
    this.#finals = [];
    w?.({ text });
  }

  write(pcm: Int16Array): void {
    if (this.#closed || this.#ws.readyState !== WebSocket.OPEN) return;
    // Bounded: when the socket is this far behind, drop audio rather than grow memory.
    if (this.#ws.bufferedAmount > (this.#o.maxBufferedBytes ?? 320_000)) return;
    this.#ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  finalize(signal?: AbortSignal): Promise<SttResult> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new ProviderError('asr', 'deepgram', 'stream closed'));
    return new Promise<SttResult>((resolve, reject) => {
      const timer = setTimeout(() => this.#resolve(), this.#o.finalizeTimeoutMs ?? 3000);
      const onAbort = (): void => {
        clearTimeout(timer);
        this.#waiter = undefined;
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiter = (r) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (r instanceof Error) reject(r);
        else resolve(r);
      };
      this.#ws.send(JSON.stringify({ type: 'Finalize' }));
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepAlive);
    this.#waiter = undefined;
    if (this.#ws.readyState === WebSocket.OPEN) {
      this.#ws.send(JSON.stringify({ type: 'CloseStream' }));
      this.#ws.close(1000);
    } else {
      this.#ws.terminate();
    }
  }
}
