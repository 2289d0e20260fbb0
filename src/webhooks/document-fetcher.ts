import http from 'node:http';
import https from 'node:https';
import type { FetchedDocument, UrlFetcher } from '../services/knowledge-documents.ts';
import { DESTINATION_REFUSED, refusedMessage, type DestinationPolicy } from './destination-policy.ts';

export interface DocumentFetcherOptions {
  policy: DestinationPolicy;
  /** Bytes of a document read at most; a longer one fails (its Content-Length is checked first). */
  maxBytes: number;
  /** Wall time for the whole fetch, redirects included, ms. */
  timeoutMs: number;
  /** Redirects followed at most; each hop is checked against the policy again. */
  maxRedirects: number;
  userAgent: string;
}

const ACCEPT = 'text/html, application/xhtml+xml, text/markdown, text/plain, application/pdf;q=0.9, */*;q=0.1';

/**
 * GETs the documents of knowledge-base URL sources: http(s) only, every address connected to
 * checked by the destination policy (the one webhooks and custom functions use: SSRF rules, the
 * allow list), redirects followed by hand so that each hop is checked again, the body read up to
 * `maxBytes` and the whole fetch bounded by `timeoutMs`. Uncompressed responses only (a response
 * compressed against `accept-encoding: identity` fails), so there is no decompression to bound.
 * No connection is kept alive: a fetch is rare and the next may be to another tenant's host.
 */
export class DocumentFetcher implements UrlFetcher {
  readonly #o: DocumentFetcherOptions;

  constructor(options: DocumentFetcherOptions) {
    this.#o = options;
  }

  /** Fetches `url`; never rejects: a failure is `{ ok: false, error }`, `error` fit for the source's owner. */
  async fetch(url: string, signal?: AbortSignal): Promise<FetchedDocument> {
    const deadline = AbortSignal.timeout(this.#o.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, deadline]) : deadline;
    let current = url;
    for (let hop = 0; ; hop += 1) {
      const result = await this.#get(current, combined, deadline);
      if (result.kind !== 'redirect') return result.document;
      if (hop === this.#o.maxRedirects) return { ok: false, error: `More than ${this.#o.maxRedirects} redirects.` };
      try {
        current = new URL(result.location, current).href;
      } catch {
        return { ok: false, error: 'A redirect to an address that is not a URL.' };
      }
    }
  }

  #get(url: string, signal: AbortSignal, deadline: AbortSignal): Promise<{ kind: 'redirect'; location: string } | { kind: 'done'; document: FetchedDocument }> {
    const done = (document: FetchedDocument) => ({ kind: 'done' as const, document });
    const fail = (error: string, detail?: string) => done(detail ? { ok: false, error, detail } : { ok: false, error });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(fail('The address is not a URL.'));
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.resolve(fail('The address is not http(s).'));
    if (target.username !== '' || target.password !== '') return Promise.resolve(fail('The address must not carry a user name or password.'));
    // IP literals never reach `lookup`: they are judged here (localhost names are judged by `lookup`).
    const literal = this.#o.policy.literalRule(target.hostname);
    if (literal) return Promise.resolve(fail(refusedMessage(literal.rule), literal.detail));
    if (signal.aborted) return Promise.resolve(fail(timedOut(deadline, this.#o.timeoutMs)));

    const transport = target.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (value: { kind: 'redirect'; location: string } | { kind: 'done'; document: FetchedDocument }) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        request.destroy();
        resolve(value);
      };
      const onAbort = () => finish(fail(timedOut(deadline, this.#o.timeoutMs)));
      const request = transport.get(target, {
        agent: false,
        headers: { accept: ACCEPT, 'accept-encoding': 'identity', 'user-agent': this.#o.userAgent },
        lookup: this.#o.policy.lookup,
      });
      signal.addEventListener('abort', onAbort, { once: true });
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === DESTINATION_REFUSED) return finish(fail(error.message, (error as { detail?: string }).detail));
        finish(fail(`The address could not be reached (${error.code ?? 'network error'}).`));
      });
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400 && status !== 304) {
          const location = response.headers.location;
          return finish(location ? { kind: 'redirect', location } : fail(`HTTP ${status} without a Location.`));
        }
        if (status < 200 || status >= 300) return finish(fail(`HTTP ${status}.`));
        const encoding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
        if (encoding !== 'identity' && encoding !== '') return finish(fail(`The response is compressed (${encoding.slice(0, 40)}); only uncompressed documents are read.`));
        const tooLarge = () => fail(`The document is larger than ${this.#o.maxBytes} bytes.`);
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > this.#o.maxBytes) return finish(tooLarge());
        const chunks: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > this.#o.maxBytes) return finish(tooLarge());
          chunks.push(chunk);
        });
        response.on('end', () => finish(done({ ok: true, body: new Uint8Array(Buffer.concat(chunks)), contentType: response.headers['content-type'] ?? null, url })));
        response.on('error', () => finish(fail('The response broke off.')));
        response.on('aborted', () => finish(fail('The response broke off.')));
      });
    });
  }
}

function timedOut(deadline: AbortSignal, timeoutMs: number): string {
  return deadline.aborted ? `No complete response within ${timeoutMs} ms.` : 'The fetch was stopped.';
}
