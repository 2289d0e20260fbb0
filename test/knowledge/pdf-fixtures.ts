/**
 * PDFs written by hand for the knowledge-base tests (no binary fixtures): a catalogue, a page tree,
 * one Helvetica font, and per page one content stream, Flate-compressed, with a correct xref table.
 */
import zlib from 'node:zlib';

/** A page: its lines of text (ASCII, drawn top down), the raw bytes of its content stream, or those bytes already deflated (`filters` times). */
export type PdfPage = readonly string[] | Buffer | { deflated: Buffer; filters?: number };

export function writePdf(pages: readonly PdfPage[]): Buffer {
  const objects: Buffer[] = [];
  const kids = pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ');
  objects.push(Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'));
  objects.push(Buffer.from(`<< /Type /Pages /Kids [${kids}] /Count ${pages.length} >>`));
  objects.push(Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'));
  for (const [i, page] of pages.entries()) {
    objects.push(Buffer.from(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`));
    const data = 'deflated' in page ? page.deflated : zlib.deflateSync(Buffer.isBuffer(page) ? page : textContent(page), { level: 9 });
    const filters = 'deflated' in page ? (page.filters ?? 1) : 1;
    const filter = filters === 1 ? '/FlateDecode' : `[${Array(filters).fill('/FlateDecode').join(' ')}]`;
    objects.push(Buffer.concat([Buffer.from(`<< /Length ${data.length} /Filter ${filter} >>\nstream\n`), data, Buffer.from('\nendstream')]));
  }
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let at = parts[0]!.length;
  for (const [i, body] of objects.entries()) {
    offsets.push(at);
    const object = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from('\nendobj\n')]);
    parts.push(object);
    at += object.length;
  }
  const xref = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  parts.push(Buffer.from(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`));
  return Buffer.concat(parts);
}

function textContent(lines: readonly string[]): Buffer {
  return Buffer.from(lines.map((line, j) => `BT /F1 12 Tf 72 ${720 - j * 16} Td (${escape(line)}) Tj ET`).join('\n'));
}

function escape(line: string): string {
  return line.replace(/[\\()]/g, (c) => `\\${c}`);
}

/**
 * A one-page PDF whose content stream inflates to `megabytes` MB of spaces, built without ever
 * holding them: one megabyte deflated with a full flush (no back references across it) repeated,
 * closed by an empty final block, in a zlib wrapper with the Adler-32 of the whole computed.
 */
export function flateBombPdf(megabytes: number): Buffer {
  return writePdf([{ deflated: zlibOfSpaces(megabytes * 1024 * 1024) }]);
}

/** A zlib stream of `length` spaces (a multiple of 1 MiB). */
export function zlibOfSpaces(length: number): Buffer {
  const megabyte = 1024 * 1024;
  const block = zlib.deflateRawSync(Buffer.alloc(megabyte, 0x20), { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH });
  const n = BigInt(length);
  const a = (1n + n * 32n) % 65521n;
  const b = (n + (32n * n * (n + 1n)) / 2n) % 65521n;
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE(Number((b << 16n) | a));
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array.from({ length: length / megabyte }, () => block), Buffer.from([0x03, 0x00]), adler]);
}
