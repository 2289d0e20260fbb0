/**
 * Knowledge-base retrieval in the process (issue 29): an inverted index of each base's chunks,
 * ranked with BM25F, built from the store's chunks and kept until the base's content changes.
 *
 * Why in the process: one search then costs one round trip to the store (the bases' content
 * stamps, to see whether an index is still current) plus the chunks it returns, whatever the store,
 * and ranks the same way on SQLite and PostgreSQL (the stores' own full-text rankings differ in
 * stemming and weighting; this one uses knowledge-terms.ts on both). Every server of a store sees
 * a change through the stamp read with each search, so a base changed on one server is indexed
 * again on the others at their next search of it.
 *
 * Ranking: BM25 (k1 1.2, b 0.75) over each chunk's heading and text as one field in which a
 * heading's terms count HEADING_WEIGHT times (BM25F), each query term's contribution multiplied by
 * its weight (knowledge-terms.ts). Term statistics (document frequencies, average length) are
 * those of all the bases searched together. As in the store's ranking, in collections of at least
 * SELECTIVE_MIN_CHUNKS chunks a term found in more than half of them is left out unless no rarer
 * term is found (BM25 weighs it near zero, and it would add every chunk as a near-zero match).
 *
 * Section evidence (contextualisation, as in structured-document retrieval): a chunk's relevance
 * also counts SECTION_WEIGHT times the BM25F of its whole section (its source's chunks under the
 * same headings, as indexed, taken together as one document among the bases' sections), so a chunk
 * of a section that answers the question as a whole gains on one whose own words match as well but
 * whose section is about something else. The sections' term frequencies are summed from the
 * chunks' postings at search time, so they cost no postings of their own.
 *
 * Passage evidence: the PASSAGE_CANDIDATES chunks ranked best (or the `limit` asked, when more)
 * are ranked again by their relevance plus PASSAGE_WEIGHT times the BM25 of their best window of
 * a few sentences (knowledge-passages.ts), so the chunk holding the question's terms together
 * leads the one that holds them scattered.
 */
import type { QueryTerm } from '../domain/knowledge-terms.ts';
import { indexTerms, sentenceTerms } from '../domain/knowledge-terms.ts';
import { ChunkPassages, type PassageTerm } from './knowledge-passages.ts';
import type { ContentStamp } from './knowledge-term-stats.ts';
import { SELECTIVE_MIN_CHUNKS, inverseDocumentFrequency, sameStamp } from './knowledge-term-stats.ts';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
/** How many times a term of a chunk's headings counts against one of its text. */
export const HEADING_WEIGHT = 2;
/**
 * How much a chunk's best window (knowledge-passages.ts) adds to its relevance, per unit of the
 * window's BM25: as much as the chunk's own. Measured on the recall benchmark's first set and
 * checked on its held-out set (BENCHMARKS.md, "Knowledge recall: passage evidence"): 0.55-1.6
 * rank alike there; 0.4 and below lose a question of the first set, 2 and above one of the
 * held-out set.
 */
export const PASSAGE_WEIGHT = 1;
/** How many of the best chunks by relevance are ranked again with their passage evidence (at least). */
export const PASSAGE_CANDIDATES = 20;
/**
 * How much a chunk's section's BM25F adds to its relevance, per unit: as much as the chunk's own.
 * Measured on the recall benchmark's first set and checked on its held-out set (BENCHMARKS.md,
 * "Knowledge recall: section evidence"): 1-1.5 rank alike there; 0.75 and below gain nothing,
 * 2 loses a question of the held-out set.
 */
export const SECTION_WEIGHT = 1;
/**
 * Chunks indexed at most in the process, all bases together (measured on 10,000 chunks of about
 * 1,500 characters: 3.4 KB each, 0.6 KB of it their passages, so about 170 MB at the bound):
 * the bases searched least recently are forgotten beyond it, and a search whose bases together
 * hold more is ranked by the store (KnowledgeRepository).
 */
export const MAX_INDEXED_CHUNKS = 50_000;

/** A chunk as an index is built from it. */
export interface IndexedChunk {
  id: number;
  heading: string;
  text: string;
  /** Its source: the chunks of one source under one heading are a section. */
  sourceId: string;
}

interface Postings {
  /** Positions of the chunks holding the term, ascending. */
  docs: Uint32Array;
  /** The term's weighted frequency in each of them (heading occurrences count HEADING_WEIGHT). */
  freqs: Float32Array;
  /** In how many sections the term occurs. */
  sections: number;
}

/** The inverted index of one base's chunks. Immutable once built. */
export class ChunkIndex {
  /** Chunk ids by position. */
  readonly ids: Float64Array;
  /** Weighted lengths (terms) by position. */
  readonly lengths: Float32Array;
  readonly totalLength: number;
  /** Each chunk's sentences, for its passage evidence. */
  readonly passages: ChunkPassages;
  /** The section of each chunk (by position), and each section's weighted length (its chunks' together). */
  readonly sectionOf: Uint32Array;
  readonly sectionLengths: Float32Array;
  readonly #postings: Map<string, Postings>;

  constructor(chunks: readonly IndexedChunk[]) {
    this.ids = new Float64Array(chunks.length);
    this.lengths = new Float32Array(chunks.length);
    this.sectionOf = new Uint32Array(chunks.length);
    const building = new Map<string, { docs: number[]; freqs: number[] }>();
    const sources: Array<{ heading: string[]; sentences: string[][] }> = [];
    const sections = new Map<string, number>();
    const sectionLengths: number[] = [];
    let total = 0;
    chunks.forEach((chunk, position) => {
      this.ids[position] = chunk.id;
      const counts = new Map<string, number>();
      const heading = indexTerms(chunk.heading);
      const sentences = sentenceTerms(chunk.text);
      sources.push({ heading, sentences });
      const text = sentences.flat();
      for (const term of heading) counts.set(term, (counts.get(term) ?? 0) + HEADING_WEIGHT);
      for (const term of text) counts.set(term, (counts.get(term) ?? 0) + 1);
      const length = heading.length * HEADING_WEIGHT + text.length;
      this.lengths[position] = length;
      total += length;
      const key = `${chunk.sourceId}\n${chunk.heading}`;
      let section = sections.get(key);
      if (section === undefined) {
        section = sectionLengths.length;
        sections.set(key, section);
        sectionLengths.push(0);
      }
      this.sectionOf[position] = section;
      sectionLengths[section]! += length;
      for (const [term, freq] of counts) {
        let list = building.get(term);
        if (!list) building.set(term, (list = { docs: [], freqs: [] }));
        list.docs.push(position);
        list.freqs.push(freq);
      }
    });
    this.totalLength = total;
    this.passages = new ChunkPassages(sources);
    this.sectionLengths = Float32Array.from(sectionLengths);
    // Each term's sections: its chunks' distinct sections (`seen` holds the last term to count each).
    const seen = new Int32Array(sectionLengths.length).fill(-1);
    let termNumber = 0;
    this.#postings = new Map(
      [...building].map(([term, list]) => {
        let inSections = 0;
        for (const doc of list.docs) {
          const section = this.sectionOf[doc]!;
          if (seen[section] === termNumber) continue;
          seen[section] = termNumber;
          inSections++;
        }
        termNumber++;
        return [term, { docs: Uint32Array.from(list.docs), freqs: Float32Array.from(list.freqs), sections: inSections }];
      }),
    );
  }

  get size(): number {
    return this.ids.length;
  }

  /** How many sections its chunks make. */
  get sections(): number {
    return this.sectionLengths.length;
  }

  /** In how many sections `term` occurs. */
  sectionFrequency(term: string): number {
    return this.#postings.get(term)?.sections ?? 0;
  }

  /** In how many chunks `term` occurs. */
  documentFrequency(term: string): number {
    return this.#postings.get(term)?.docs.length ?? 0;
  }

  postings(term: string): Postings | undefined {
    return this.#postings.get(term);
  }
}

/** A chunk a ranking found: its id and relevance (> 0: BM25F, plus its passage evidence). */
export interface Ranked {
  id: number;
  relevance: number;
}

/**
 * The `limit` chunks of `indexes` (searched as one collection) most relevant to `query`, most
 * relevant first (ties: the lower id first). Chunks matching no term are left out. A chunk's
 * relevance is its BM25F plus `sectionWeight` (default SECTION_WEIGHT) times its section's; the
 * best max(`limit`, PASSAGE_CANDIDATES) by it are ranked again with their passage evidence, at
 * `passageWeight` (default PASSAGE_WEIGHT). Both 0: BM25F alone, the benchmark's baseline.
 */
export function rankChunks(indexes: readonly ChunkIndex[], query: readonly QueryTerm[], limit: number, { passageWeight = PASSAGE_WEIGHT, sectionWeight = SECTION_WEIGHT } = {}): Ranked[] {
  const chunks = indexes.reduce((n, index) => n + index.size, 0);
  if (chunks === 0 || query.length === 0 || limit <= 0) return [];
  const totalLength = indexes.reduce((n, index) => n + index.totalLength, 0);
  const averageLength = Math.max(1, totalLength / chunks);
  const matched = query.flatMap(({ term, weight }) => {
    const df = indexes.reduce((n, index) => n + index.documentFrequency(term), 0);
    return df === 0 ? [] : [{ term, df, asked: weight, weight: weight * inverseDocumentFrequency(df, chunks) }];
  });
  const rarest = Math.min(...matched.map((t) => t.df));
  const weighted = chunks < SELECTIVE_MIN_CHUNKS ? matched : matched.filter((t) => t.df <= chunks / 2 || t.df === rarest);
  // Section evidence: the same terms, weighed by their inverse document frequency among the sections.
  const sections = indexes.reduce((n, index) => n + index.sections, 0);
  const averageSection = Math.max(1, totalLength / sections);
  const sectionTerms =
    sectionWeight === 0 ? null : weighted.map(({ term, asked }) => ({ term, weight: asked * inverseDocumentFrequency(indexes.reduce((n, index) => n + index.sectionFrequency(term), 0), sections) }));
  const found: Array<Ranked & { index: number; position: number }> = [];
  indexes.forEach((index, which) => {
    const scores = chunkScores(index, weighted, averageLength);
    const sectionScores = sectionTerms ? sectionScoresOf(index, sectionTerms, averageSection) : null;
    for (let doc = 0; doc < scores.length; doc++) {
      if (scores[doc]! === 0) continue;
      const section = sectionScores ? sectionWeight * sectionScores[index.sectionOf[doc]!]! : 0;
      found.push({ id: index.ids[doc]!, relevance: scores[doc]! + section, index: which, position: doc });
    }
  });
  const byRelevance = (a: Ranked, b: Ranked) => b.relevance - a.relevance || a.id - b.id;
  found.sort(byRelevance);
  if (passageWeight === 0) return found.slice(0, limit).map(({ id, relevance }) => ({ id, relevance }));
  const candidates = found.slice(0, Math.max(limit, PASSAGE_CANDIDATES));
  // Passage evidence: the same terms and weights, each index's ids for them, windows of all indexes averaged together.
  const averageWindow = Math.max(1, indexes.reduce((n, index) => n + index.passages.totalWindowLength, 0) / Math.max(1, indexes.reduce((n, index) => n + index.passages.windows, 0)));
  const passageQuery = indexes.map((index) =>
    weighted.flatMap(({ term, weight }): PassageTerm[] => {
      const id = index.passages.termId(term);
      return id === undefined ? [] : [{ id, weight }];
    }),
  );
  return candidates
    .map(({ id, relevance, index, position }) => ({
      id,
      relevance: relevance + passageWeight * indexes[index]!.passages.best(position, passageQuery[index]!, averageWindow, { k1: BM25_K1, b: BM25_B }),
    }))
    .sort(byRelevance)
    .slice(0, limit);
}

/** Each chunk's BM25F for `terms` (each with its weight x IDF), by position. */
function chunkScores(index: ChunkIndex, terms: ReadonlyArray<{ term: string; weight: number }>, averageLength: number): Float64Array {
  const scores = new Float64Array(index.size);
  for (const { term, weight } of terms) {
    const list = index.postings(term);
    if (!list) continue;
    for (let i = 0; i < list.docs.length; i++) {
      const doc = list.docs[i]!;
      const tf = list.freqs[i]!;
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * index.lengths[doc]!) / averageLength);
      scores[doc]! += (weight * tf * (BM25_K1 + 1)) / (tf + norm);
    }
  }
  return scores;
}

/** Each section's BM25F for `terms` (each with its weight x the sections' IDF): its chunks' frequencies summed, term by term. */
function sectionScoresOf(index: ChunkIndex, terms: ReadonlyArray<{ term: string; weight: number }>, averageLength: number): Float64Array {
  const scores = new Float64Array(index.sections);
  const frequencies = new Float64Array(index.sections);
  const touched: number[] = [];
  for (const { term, weight } of terms) {
    const list = index.postings(term);
    if (!list) continue;
    for (let i = 0; i < list.docs.length; i++) {
      const section = index.sectionOf[list.docs[i]!]!;
      if (frequencies[section] === 0) touched.push(section);
      frequencies[section]! += list.freqs[i]!;
    }
    for (const section of touched) {
      const tf = frequencies[section]!;
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * index.sectionLengths[section]!) / averageLength);
      scores[section]! += (weight * tf * (BM25_K1 + 1)) / (tf + norm);
      frequencies[section] = 0;
    }
    touched.length = 0;
  }
  return scores;
}

/**
 * The current index of each base, by its content stamp: built on a base's first search and
 * again after its content changes (`load` reads its chunks), forgotten least recently used first
 * beyond `maxChunks` (default MAX_INDEXED_CHUNKS). One build per base at a time; searches
 * meanwhile wait for it.
 */
export class KnowledgeIndexCache {
  readonly maxChunks: number;
  readonly #entries = new Map<string, { stamp: ContentStamp; index: Promise<ChunkIndex> }>();
  #chunks = 0;
  readonly #sizes = new Map<string, number>();

  constructor(maxChunks = MAX_INDEXED_CHUNKS) {
    this.maxChunks = maxChunks;
  }

  /** The index of `baseId` for content `stamp`, building it when missing or stale. */
  index(baseId: string, stamp: ContentStamp, load: () => Promise<IndexedChunk[]>): Promise<ChunkIndex> {
    const entry = this.#entries.get(baseId);
    this.#entries.delete(baseId); // re-inserted last: the most recently used
    if (entry && sameStamp(entry.stamp, stamp)) {
      this.#entries.set(baseId, entry);
      return entry.index;
    }
    this.#forget(baseId);
    const index = load().then((chunks) => new ChunkIndex(chunks));
    // A failed build is forgotten, so the next search tries again.
    index.catch(() => {
      if (this.#entries.get(baseId)?.index === index) this.#forget(baseId);
    });
    this.#entries.set(baseId, { stamp, index });
    this.#sizes.set(baseId, stamp.chunks);
    this.#chunks += stamp.chunks;
    for (const oldest of this.#entries.keys()) {
      if (this.#chunks <= this.maxChunks || oldest === baseId) break;
      this.#forget(oldest);
    }
    return index;
  }

  /** Chunks held (by the stamps of the bases indexed), for tests and metrics. */
  get chunks(): number {
    return this.#chunks;
  }

  #forget(baseId: string): void {
    this.#entries.delete(baseId);
    this.#chunks -= this.#sizes.get(baseId) ?? 0;
    this.#sizes.delete(baseId);
  }
}
