/**
 * A source's document as text the chunker reads: Markdown and plain text as they are, HTML as
 * Markdown (its content only, headings kept), PDF as plain text read in a bounded worker thread.
 * And the port through which URL sources are fetched (src/webhooks/document-fetcher.ts).
 */
import { KNOWLEDGE_LIMITS, fetchedFormat, type DocumentFormat } from '../domain/knowledge-base.ts';
import { htmlToMarkdown } from '../lib/html-text.ts';
import { extractPdfText } from '../lib/pdf-text.ts';

/** What a fetch of a URL source came to; `error` is for the source's owner, `detail` for the log only. */
export type FetchedDocument =
  | { ok: true; body: Uint8Array; contentType: string | null; url: string }
  | { ok: false; error: string; detail?: string };

/** Fetches URL sources through the destination policy, within the size and time bounds. */
export interface UrlFetcher {
  fetch(url: string, signal?: AbortSignal): Promise<FetchedDocument>;
}

/** A URL source's document as fetched: its bytes, its format and charset; or why not (`detail` for the log only). */
export type UrlDocument = { ok: true; body: Uint8Array; format: DocumentFormat; charset: string | undefined } | { ok: false; error: string; detail?: string };

/** Fetches `url` and tells its format from the response (fetchedFormat); a format we do not read fails it. */
export async function fetchUrlDocument(fetcher: UrlFetcher, url: string): Promise<UrlDocument> {
  const fetched = await fetcher.fetch(url);
  if (!fetched.ok) return fetched;
  const format = fetchedFormat(fetched.contentType, fetched.url);
  if (format === null) return { ok: false, error: `The address answered with ${describeType(fetched.contentType)}, which is not HTML, Markdown, plain text or PDF.` };
  const charset = /;\s*charset="?([\w-]+)/i.exec(fetched.contentType ?? '')?.[1];
  return { ok: true, body: fetched.body, format, charset };
}

function describeType(contentType: string | null): string {
  return contentType === null ? 'no Content-Type' : `Content-Type ${contentType.split(';')[0]!.trim().slice(0, 80)}`;
}

/** A document read: the text to chunk and how to chunk it, and a title when the document has one. */
export type ExtractedDocument = { ok: true; text: string; chunkAs: 'markdown' | 'text'; title: string | null } | { ok: false; error: string };

/**
 * The text of `body` read as `format` (text in `charset`, a WHATWG encoding label, default
 * UTF-8); never rejects: a document that cannot be read is `{ ok: false, error }`.
 */
export async function extractDocument(format: DocumentFormat, body: Uint8Array, charset = 'utf-8'): Promise<ExtractedDocument> {
  if (format === 'pdf') {
    const pdf = await extractPdfText(body, {
      maxPages: KNOWLEDGE_LIMITS.pdfPages,
      maxChars: KNOWLEDGE_LIMITS.documentChars,
      inflatedBytes: KNOWLEDGE_LIMITS.pdfInflatedBytes,
      timeoutMs: KNOWLEDGE_LIMITS.pdfTimeoutMs,
      heapMb: KNOWLEDGE_LIMITS.pdfHeapMb,
    });
    return pdf.ok ? { ok: true, text: pdf.text.replaceAll('\u0000', ''), chunkAs: 'text', title: null } : pdf;
  }
  const text = decodeText(body, charset);
  if (text === null) return { ok: false, error: `The document is not valid ${charset.toUpperCase()} text.` };
  if (format !== 'html') return { ok: true, text, chunkAs: format, title: null };
  const page = htmlToMarkdown(text, KNOWLEDGE_LIMITS.documentChars);
  if (page.cut) return { ok: false, error: `The page holds more than ${KNOWLEDGE_LIMITS.documentChars} characters of text.` };
  return { ok: true, text: page.markdown, chunkAs: 'markdown', title: page.title === '' ? null : page.title };
}

/** The document's text (NUL characters, which PostgreSQL text cannot hold, removed), or null when it is not text in `charset`. */
function decodeText(body: Uint8Array, charset: string): string | null {
  try {
    return new TextDecoder(charset, { fatal: true }).decode(body).replaceAll('\u0000', '');
  } catch {
    return null;
  }
}
