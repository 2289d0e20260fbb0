/**
 * The in-process vector search of hybrid retrieval (docs/knowledge-bases.md): the chunks' vectors
 * of a set of knowledge bases, scanned with the query's (a dot product, all being of unit length)
 * for the nearest ones. A brute-force scan is exact; its cost grows with chunks x dimensions
 * (10,000 chunks of 1,536 dimensions: 15 million multiply-adds a search); an approximate index is
 * the next step for sets much larger than that.
 *
 * The vectors are read from the store in pages (so memory is bounded whatever the bases hold) and
 * kept here, per set of bases and model, in one typed array, until the bases' content changes
 * (the same stamp as the term statistics, knowledge-term-stats.ts). The sets kept at once are
 * bounded by their bytes, least recently used forgotten first; a set larger than the whole budget
 * is scanned page by page at every search and never kept. Reading pages stops at the caller's
 * deadline (the search then has no vector ranking).
 */
import { type ContentStamp, sameStamp } from './knowledge-term-stats.ts';
import { readVector } from '../lib/vectors.ts';

/** Bytes of vectors kept at once, all sets together. */
export const MAX_KEPT_VECTOR_BYTES = 256 * 1024 * 1024;
/** Chunks read per page. */
const PAGE_ROWS = 1_000;

/** A page of stored vectors, ordered by chunk id. */
export type VectorRows = ReadonlyArray<{ id: number; embedding: Uint8Array | null }>;
/** Reads the page of chunks after chunk id `afterId` (at most `rows`). */
export type VectorPageReader = (afterId: number, rows: number) => Promise<VectorRows>;

interface Entry {
  stamp: ContentStamp;
  ids: Float64Array;
  vectors: Float32Array;
}

export interface Neighbour {
  id: number;
  /** Cosine similarity, -1 to 1. */
  similarity: number;
}

export class VectorIndex {
  readonly #entries = new Map<string, Entry>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes = MAX_KEPT_VECTOR_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /**
   * The `limit` chunks nearest `query`, nearest first (ties by id); chunks of other dimensions are
   * left out. Null when pages were still to be read at `deadline` (a performance.now() time).
   */
  async nearest(baseIds: readonly string[], model: string, stamp: ContentStamp, query: Float32Array, limit: number, read: VectorPageReader, deadline = Infinity): Promise<Neighbour[] | null> {
    const key = `${model}\n${query.length}\n${[...baseIds].sort().join(',')}`;
    const kept = this.#entries.get(key);
    if (kept && sameStamp(kept.stamp, stamp)) {
      this.#entries.delete(key);
      this.#entries.set(key, kept);
      return scan(kept.ids, kept.vectors, query, limit, []);
    }
    if (kept) this.#forget(key);
    const dims = query.length;
    let best: Neighbour[] = [];
    const pages: Array<{ ids: Float64Array; vectors: Float32Array }> = [];
    let keptBytes = 0;
    let keep = true;
    for (let afterId = -1; ; ) {
      if (performance.now() > deadline) return null;
      const rows = await read(afterId, PAGE_ROWS);
      if (rows.length === 0) break;
      afterId = rows[rows.length - 1]!.id;
      const ids = new Float64Array(rows.length);
      const vectors = new Float32Array(rows.length * dims);
      let n = 0;
      for (const row of rows) {
        if (row.embedding && readVector(row.embedding, dims, vectors, n * dims)) ids[n++] = row.id;
      }
      const page = { ids: ids.subarray(0, n), vectors: vectors.subarray(0, n * dims) };
      best = scan(page.ids, page.vectors, query, limit, best);
      keptBytes += page.vectors.byteLength + page.ids.byteLength;
      keep &&= keptBytes <= this.#maxBytes;
      if (keep) pages.push(page);
      else pages.length = 0;
      if (rows.length < PAGE_ROWS) break;
    }
    if (keep) this.#keep(key, { stamp, ...concat(pages, dims) });
    return best;
  }

  #keep(key: string, entry: Entry): void {
    const bytes = entry.vectors.byteLength + entry.ids.byteLength;
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes + bytes <= this.#maxBytes) break;
      this.#forget(oldest);
    }
    this.#entries.set(key, entry);
    this.#bytes += bytes;
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#bytes -= entry.vectors.byteLength + entry.ids.byteLength;
    this.#entries.delete(key);
  }
}

/** `best` (nearest first, at most `limit`) updated with the vectors of `ids`. */
function scan(ids: Float64Array, vectors: Float32Array, query: Float32Array, limit: number, best: Neighbour[]): Neighbour[] {
  const dims = query.length;
  const out = [...best];
  for (let i = 0; i < ids.length; i++) {
    let dot = 0;
    const offset = i * dims;
    for (let d = 0; d < dims; d++) dot += vectors[offset + d]! * query[d]!;
    if (out.length === limit && !better(dot, ids[i]!, out[limit - 1]!)) continue;
    let at = out.length;
    while (at > 0 && better(dot, ids[i]!, out[at - 1]!)) at--;
    out.splice(at, 0, { id: ids[i]!, similarity: dot });
    if (out.length > limit) out.pop();
  }
  return out;
}

function better(similarity: number, id: number, than: Neighbour): boolean {
  return similarity > than.similarity || (similarity === than.similarity && id < than.id);
}

function concat(pages: ReadonlyArray<{ ids: Float64Array; vectors: Float32Array }>, dims: number): { ids: Float64Array; vectors: Float32Array } {
  const count = pages.reduce((n, p) => n + p.ids.length, 0);
  const ids = new Float64Array(count);
  const vectors = new Float32Array(count * dims);
  let n = 0;
  for (const page of pages) {
    ids.set(page.ids, n);
    vectors.set(page.vectors, n * dims);
    n += page.ids.length;
  }
  return { ids, vectors };
}
