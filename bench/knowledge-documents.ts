/**
 * Knowledge-base document benchmark (issue 29, HTML and PDF sources): how many pages per second
 * become chunks when they arrive as HTML or PDF, against the same text as Markdown (the baseline:
 * the chunker alone), in one run.
 *
 *   node bench/knowledge-documents.ts [--pages 200]
 *
 * The text is deterministic: pages of 500 words in sections of about 250 words under headings.
 * Rows:
 *  - Markdown (baseline): chunkDocument on the Markdown;
 *  - HTML: the same sections as an HTML page with a nav, a script and a footer around them,
 *    through extractDocument (htmlparser2 to Markdown) and the chunker;
 *  - PDF: the same words as a PDF of `pages` pages (about 60 lines of text each), through
 *    extractDocument (a worker thread with PDF.js, started per document, as ingestion does) and
 *    the chunker; and a one-page PDF, the worker's fixed cost.
 */
import { performance } from 'node:perf_hooks';
import { chunkDocument } from '../src/domain/knowledge-chunks.ts';
import { extractDocument } from '../src/services/knowledge-documents.ts';
import { writePdf } from '../test/knowledge/pdf-fixtures.ts';
import { fmt, machine } from './lib.ts';

const WORDS_PER_PAGE = 500;
const WORDS = ['refund', 'bicycle', 'frame', 'warranty', 'delivery', 'saddle', 'chain', 'repair', 'order', 'shop', 'helmet', 'light', 'storage', 'rental', 'invoice', 'parcel'];

function words(count: number, seed: number): string[] {
  return Array.from({ length: count }, (_, i) => WORDS[(i * 7 + seed * 13 + ((i * i) % 11)) % WORDS.length]!);
}

async function timed<T>(run: () => Promise<T> | T, rounds: number): Promise<{ ms: number; value: T }> {
  let value = await run();
  const started = performance.now();
  for (let i = 0; i < rounds; i += 1) value = await run();
  return { ms: (performance.now() - started) / rounds, value };
}

export async function runKnowledgeDocumentsBench(options: { pages?: number; log: (line: string) => void }): Promise<string> {
  const pages = options.pages ?? 200;
  const sections = Array.from({ length: pages * 2 }, (_, i) => ({ heading: `Section ${i}`, text: words(WORDS_PER_PAGE / 2, i).join(' ') + '.' }));
  const markdown = sections.map((s) => `## ${s.heading}\n\n${s.text}`).join('\n\n');
  const html = `<!doctype html><html><head><title>Manual</title><script>var tracking = 1;</script></head><body><nav><a href="/">Home</a></nav><main>${sections
    .map((s) => `<h2>${s.heading}</h2><p>${s.text}</p>`)
    .join('')}</main><footer>Copyright</footer></body></html>`;
  const pdf = writePdf(
    Array.from({ length: pages }, (_, page) => {
      const text = words(WORDS_PER_PAGE, page);
      return Array.from({ length: Math.ceil(text.length / 9) }, (_, line) => text.slice(line * 9, line * 9 + 9).join(' '));
    }),
  );
  const onePage = writePdf([words(WORDS_PER_PAGE, 1).reduce<string[]>((lines, word, i) => (i % 9 === 0 ? [...lines, word] : [...lines.slice(0, -1), `${lines.at(-1)} ${word}`]), [])]);
  const bytes = (text: string) => new TextEncoder().encode(text);

  options.log(`knowledge documents: ${pages} pages of ${WORDS_PER_PAGE} words`);
  const base = await timed(() => chunkDocument('Manual', markdown, 'markdown'), 5);
  const fromHtml = await timed(async () => {
    const doc = await extractDocument('html', bytes(html));
    if (!doc.ok) throw new Error(doc.error);
    return chunkDocument(doc.title ?? 'Manual', doc.text, doc.chunkAs);
  }, 5);
  const fromPdf = await timed(async () => {
    const doc = await extractDocument('pdf', pdf);
    if (!doc.ok) throw new Error(doc.error);
    return chunkDocument('Manual', doc.text, doc.chunkAs);
  }, 2);
  const single = await timed(async () => {
    const doc = await extractDocument('pdf', onePage);
    if (!doc.ok) throw new Error(doc.error);
    return doc;
  }, 2);
  const rate = (ms: number) => fmt((pages / ms) * 1000, 0);
  const rows = [
    `| Markdown, chunker alone (baseline) | ${fmt(base.ms)} ms | ${rate(base.ms)} | ${base.value.length} |`,
    `| HTML to Markdown, then chunked | ${fmt(fromHtml.ms)} ms | ${rate(fromHtml.ms)} (${fmt(fromHtml.ms / base.ms)} x the baseline's time) | ${fromHtml.value.length} |`,
    `| PDF (${pdf.length} bytes) in its worker, then chunked | ${fmt(fromPdf.ms)} ms | ${rate(fromPdf.ms)} | ${fromPdf.value.length} |`,
    `| a one-page PDF (the worker's fixed cost) | ${fmt(single.ms)} ms | | |`,
  ];
  const report = [`machine: ${machine()}`, '', '| document | time | pages/s | chunks |', '|---|---|---|---|', ...rows].join('\n');
  options.log(report);
  return report;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const index = process.argv.indexOf('--pages');
  const pages = index === -1 ? undefined : Number(process.argv[index + 1]);
  await runKnowledgeDocumentsBench({ pages, log: (line) => process.stdout.write(`${line}\n`) });
}
