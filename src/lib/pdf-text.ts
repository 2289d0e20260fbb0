/**
 * The text of a PDF, read with PDF.js (pdfjs-dist, Mozilla's) in a worker thread of its own with
 * bounds on pages, text, heap and time: PDF parsing is CPU- and memory-hungry, and a hostile file (a
 * Flate stream that inflates to gigabytes, a file of thousands of pages, a loop of objects) must
 * fail that document, never the process. One worker per document, terminated when done.
 */
import { Worker } from 'node:worker_threads';

export interface PdfTextLimits {
  /** Pages read at most; a PDF with more fails (too_many_pages) before any is read. */
  maxPages: number;
  /** Characters of text kept at most; a PDF with more fails (too_much_text). */
  maxChars: number;
  /** Bytes the document's compressed streams may inflate to in all; beyond, it fails (too_large) unread. */
  inflatedBytes: number;
  /** Wall time for the whole document, ms; past it the worker is terminated (timeout). */
  timeoutMs: number;
  /** The worker's old-generation heap, MB; past it the worker dies (too_large). */
  heapMb: number;
}

/** What the worker answers. */
export type PdfWorkerReply =
  | { ok: true; text: string; pages: number }
  | { ok: false; reason: 'too_many_pages' | 'too_much_text'; pages: number }
  | { ok: false; reason: 'inflates_too_far' }
  | { ok: false; reason: 'unreadable'; detail: string };

export type PdfTextResult = { ok: true; text: string; pages: number } | { ok: false; error: string };

const WORKER_URL = new URL('./pdf-text.worker.ts', import.meta.url);

/** Reads `bytes` as a PDF within `limits`; never rejects: a failure is `{ ok: false, error }` saying why. */
export function extractPdfText(bytes: Uint8Array, limits: PdfTextLimits): Promise<PdfTextResult> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER_URL, {
      workerData: { bytes, limits },
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
      // PDF.js warns on the console about what it cannot render (fonts, canvas): not ours to print.
      stdout: true,
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    let settled = false;
    const finish = (result: PdfTextResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      void worker.terminate();
      resolve(result);
    };
    const deadline = setTimeout(() => finish({ ok: false, error: `The PDF could not be read within ${limits.timeoutMs} ms.` }), limits.timeoutMs);
    worker.once('message', (reply: PdfWorkerReply) => finish(describe(reply, limits)));
    worker.once('error', (error: NodeJS.ErrnoException) => {
      const tooLarge = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      finish({ ok: false, error: tooLarge ? `The PDF needs more than ${limits.heapMb} MB to read.` : 'The PDF could not be read.' });
    });
    worker.once('exit', () => finish({ ok: false, error: 'The PDF could not be read.' }));
  });
}

function describe(reply: PdfWorkerReply, limits: PdfTextLimits): PdfTextResult {
  if (reply.ok) return reply;
  switch (reply.reason) {
    case 'too_many_pages':
      return { ok: false, error: `The PDF has ${reply.pages} pages; at most ${limits.maxPages} are read.` };
    case 'too_much_text':
      return { ok: false, error: `The PDF holds more than ${limits.maxChars} characters of text.` };
    case 'inflates_too_far':
      return { ok: false, error: `The PDF's compressed streams inflate to more than ${limits.inflatedBytes} bytes.` };
    case 'unreadable':
      return { ok: false, error: `The PDF could not be read: ${reply.detail}` };
  }
}
