/**
 * The worker thread of pdf-text.ts: reads one PDF's text with PDF.js and posts it back. It runs
 * with its own heap bounds and a deadline set by the parent, which terminates it past them, so a
 * hostile PDF (a huge Flate stream, thousands of pages) costs this thread, never the server.
 */
import { parentPort, workerData } from 'node:worker_threads';
import zlib from 'node:zlib';
import type { PdfTextLimits, PdfWorkerReply } from './pdf-text.ts';

interface TextItem {
  str?: string;
  hasEOL?: boolean;
}

const { bytes, limits } = workerData as { bytes: Uint8Array; limits: PdfTextLimits };

async function extract(): Promise<PdfWorkerReply> {
  if (!inflatesWithin(bytes, limits.inflatedBytes)) return { ok: false, reason: 'inflates_too_far' };
  // The legacy build is PDF.js's build for Node; without a worker port it parses in this thread.
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = pdfjs.getDocument({
    data: bytes,
    useWasm: false,
    disableFontFace: true,
    useSystemFonts: false,
    useWorkerFetch: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  try {
    const document = await task.promise;
    if (document.numPages > limits.maxPages) return { ok: false, reason: 'too_many_pages', pages: document.numPages };
    const pages: string[] = [];
    let size = 0;
    for (let number = 1; number <= document.numPages; number += 1) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items as TextItem[]) {
        text += item.str ?? '';
        if (item.hasEOL) text += '\n';
        if (size + text.length > limits.maxChars) return { ok: false, reason: 'too_much_text', pages: document.numPages };
      }
      page.cleanup();
      size += text.length + 2;
      pages.push(text.trim());
    }
    return { ok: true, text: pages.filter((p) => p !== '').join('\n\n'), pages: document.numPages };
  } catch (error) {
    return { ok: false, reason: 'unreadable', detail: error instanceof Error ? error.message.slice(0, 200) : 'unknown error' };
  } finally {
    await task.destroy();
  }
}


/** Nested compression (a Flate stream holding a Flate stream) followed this deep at most. */
const MAX_NESTING = 3;

/**
 * Whether the document's compressed streams inflate to at most `budget` bytes in all. PDF.js holds a
 * stream's inflated bytes in ArrayBuffers, which the worker's heap limits do not count, so a stream
 * that inflates to gigabytes would grow the process: every `stream ... endstream` region is
 * inflated here first, with zlib bounded by what is left of the budget (streams that are not
 * zlib data are skipped; a truncated one counts what it yields, as PDF.js would read it).
 */
function inflatesWithin(data: Uint8Array, budget: number): boolean {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let left = budget;
  const inflate = (region: Buffer, depth: number): boolean => {
    if (depth > MAX_NESTING || !looksLikeZlib(region)) return true;
    let out: Buffer;
    try {
      out = zlib.inflateSync(region, { maxOutputLength: Math.max(1, left), finishFlush: zlib.constants.Z_SYNC_FLUSH });
    } catch (error) {
      // Past the budget; any other error is data zlib cannot read, which PDF.js will not inflate either.
      return (error as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE';
    }
    left -= out.length;
    return left > 0 && inflate(out, depth + 1);
  };
  for (let at = buffer.indexOf('stream'); at !== -1; at = buffer.indexOf('stream', at + 6)) {
    // `endstream` contains `stream`: only the keyword that opens a stream (then an end of line) counts.
    if (buffer.subarray(Math.max(0, at - 3), at).toString('latin1') === 'end') continue;
    let start = at + 6;
    if (buffer[start] === 0x0d) start += 1;
    if (buffer[start] !== 0x0a && buffer[start - 1] !== 0x0d) continue;
    if (buffer[start] === 0x0a) start += 1;
    const end = buffer.indexOf('endstream', start);
    if (!inflate(buffer.subarray(start, end === -1 ? buffer.length : end), 1)) return false;
    if (end === -1) break;
    at = end + 3;
  }
  return true;
}

/** A zlib header (RFC 1950): deflate with a window of at most 32 KB and a valid check. */
function looksLikeZlib(region: Buffer): boolean {
  return region.length >= 2 && (region[0]! & 0x0f) === 8 && (region[0]! >> 4) <= 7 && ((region[0]! << 8) | region[1]!) % 31 === 0;
}

parentPort!.postMessage(await extract());
