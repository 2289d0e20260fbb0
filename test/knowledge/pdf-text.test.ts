import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { describe, it } from 'node:test';
import { extractPdfText, type PdfTextLimits } from '../../src/lib/pdf-text.ts';
import { flateBombPdf, writePdf, zlibOfSpaces } from './pdf-fixtures.ts';

const limits: PdfTextLimits = { maxPages: 3, maxChars: 10_000, inflatedBytes: 8 * 1024 * 1024, timeoutMs: 15_000, heapMb: 128 };

// Reading a good PDF, a broken one, and PDFs as files and URLs: test/knowledge/knowledge-sources.test.ts.
describe('PDF text, bounded (hostile PDFs fail the document, never the process)', () => {
  it('fails a Flate bomb before parsing it, nested ones too', async () => {
    assert.equal(zlib.inflateSync(zlibOfSpaces(2 * 1024 * 1024)).toString(), ' '.repeat(2 * 1024 * 1024), 'the bomb is valid zlib data');
    const heapBefore = process.memoryUsage().rss;
    assert.deepEqual(await extractPdfText(flateBombPdf(16), limits), { ok: false, error: `The PDF's compressed streams inflate to more than ${limits.inflatedBytes} bytes.` });
    // A stream deflated twice (two Flate filters): the outer layer is small, the inner one is the bomb.
    const inner = zlibOfSpaces(32 * 1024 * 1024);
    const nested = writePdf([{ deflated: zlib.deflateSync(inner), filters: 2 }]);
    assert.deepEqual(await extractPdfText(nested, limits), { ok: false, error: `The PDF's compressed streams inflate to more than ${limits.inflatedBytes} bytes.` });
    assert.ok(process.memoryUsage().rss - heapBefore < 200 * 1024 * 1024, 'the bombs were never inflated in this process');
  });

  it('bounds pages, text and time', async () => {
    assert.deepEqual(await extractPdfText(writePdf([['a'], ['b'], ['c'], ['d']]), limits), { ok: false, error: 'The PDF has 4 pages; at most 3 are read.' });
    const wordy = writePdf([Array.from({ length: 40 }, (_, i) => `line ${i} ${'word '.repeat(60)}`)]);
    assert.deepEqual(await extractPdfText(wordy, { ...limits, maxChars: 2_000 }), { ok: false, error: 'The PDF holds more than 2000 characters of text.' });
    // A content stream of 6 MB of operators within the inflate budget takes PDF.js far longer than 300 ms.
    const slow = writePdf([Buffer.from('BT /F1 12 Tf 72 700 Td (x) Tj ET\n'.repeat(200_000))]);
    const started = performance.now();
    assert.deepEqual(await extractPdfText(slow, { ...limits, timeoutMs: 300 }), { ok: false, error: 'The PDF could not be read within 300 ms.' });
    assert.ok(performance.now() - started < 2_000, 'the worker was stopped at its deadline');
  });
});
