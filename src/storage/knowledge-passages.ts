/**
 * Passage evidence for knowledge-base retrieval (issue 29): each chunk's best window of a few
 * consecutive sentences, scored with BM25 as if the window were the document ("small-to-big": the
 * window is the evidence, the chunk of about 300-500 tokens stays what is returned).
 *
 * Why: a chunk's BM25 counts its matches wherever they are, so a long chunk that mentions the
 * question's words in unrelated sentences can outrank the chunk that answers the question in one
 * sentence. The best window rewards the question's terms found together. knowledge-index.ts adds
 * it, at PASSAGE_WEIGHT, to the chunk's own relevance for its best candidates.
 *
 * Held per index: each chunk's text terms as ids into the index's vocabulary (16 bits while the
 * vocabulary allows), where each of its sentences ends, and its heading's terms, which belong to
 * every window of the chunk (counted once, as in the text).
 */
/** Consecutive sentences in a window (a chunk with fewer is one window). */
export const PASSAGE_SENTENCES = 3;

/** A chunk as its passages are built: heading terms, then its text's terms sentence by sentence. */
export interface PassageSource {
  heading: readonly string[];
  sentences: ReadonlyArray<readonly string[]>;
}

/** BM25's parameters, passed by the ranking that owns them (knowledge-index.ts). */
export interface PassageParameters {
  k1: number;
  b: number;
}

/** A query term in an index's vocabulary: its id and what a match counts (weight x IDF). */
export interface PassageTerm {
  id: number;
  weight: number;
}

/** The sentences and heading terms of one index's chunks, by position. Immutable once built. */
export class ChunkPassages {
  /** Windows over all chunks, and their summed lengths (terms): the average window length. */
  readonly windows: number;
  readonly totalWindowLength: number;
  readonly #vocabulary = new Map<string, number>();
  readonly #terms: Uint16Array | Uint32Array;
  /** End (exclusive, into #terms) of each sentence, all chunks in order. */
  readonly #sentenceEnds: Uint32Array;
  /** Index of each chunk's first sentence in #sentenceEnds; one entry more than chunks. */
  readonly #firstSentence: Uint32Array;
  readonly #headingTerms: Uint16Array | Uint32Array;
  /** Index of each chunk's first heading term; one entry more than chunks. */
  readonly #firstHeadingTerm: Uint32Array;

  constructor(chunks: readonly PassageSource[]) {
    const terms: number[] = [];
    const sentenceEnds: number[] = [];
    const headingTerms: number[] = [];
    this.#firstSentence = new Uint32Array(chunks.length + 1);
    this.#firstHeadingTerm = new Uint32Array(chunks.length + 1);
    let windows = 0;
    let totalWindowLength = 0;
    chunks.forEach((chunk, position) => {
      this.#firstSentence[position] = sentenceEnds.length;
      this.#firstHeadingTerm[position] = headingTerms.length;
      for (const term of chunk.heading) headingTerms.push(this.#id(term));
      const lengths: number[] = [];
      for (const sentence of chunk.sentences) {
        for (const term of sentence) terms.push(this.#id(term));
        sentenceEnds.push(terms.length);
        lengths.push(sentence.length);
      }
      for (const length of windowLengths(lengths)) {
        windows++;
        totalWindowLength += chunk.heading.length + length;
      }
    });
    this.#firstSentence[chunks.length] = sentenceEnds.length;
    this.#firstHeadingTerm[chunks.length] = headingTerms.length;
    const ids = this.#vocabulary.size <= 0x10000 ? Uint16Array : Uint32Array;
    this.#terms = ids.from(terms);
    this.#headingTerms = ids.from(headingTerms);
    this.#sentenceEnds = Uint32Array.from(sentenceEnds);
    this.windows = windows;
    this.totalWindowLength = totalWindowLength;
  }

  /** The id of `term` in this index's vocabulary, or undefined when no chunk holds it. */
  termId(term: string): number | undefined {
    return this.#vocabulary.get(term);
  }

  /**
   * The BM25 of the best window of chunk `position` for `query` (each term at most once), with
   * windows `averageLength` terms long on average; 0 when no window holds a query term.
   */
  best(position: number, query: readonly PassageTerm[], averageLength: number, { k1, b }: PassageParameters): number {
    if (query.length === 0) return 0;
    const slot = new Map(query.map((t, i) => [t.id, i]));
    const width = query.length;
    const heading = new Float64Array(width);
    for (let i = this.#firstHeadingTerm[position]!; i < this.#firstHeadingTerm[position + 1]!; i++) {
      const q = slot.get(this.#headingTerms[i]!);
      if (q !== undefined) heading[q]!++;
    }
    const headingLength = this.#firstHeadingTerm[position + 1]! - this.#firstHeadingTerm[position]!;
    const first = this.#firstSentence[position]!;
    const sentences = this.#firstSentence[position + 1]! - first;
    // Each sentence's count of each query term, and its length.
    const counts = new Float64Array(Math.max(1, sentences) * width);
    const lengths = new Float64Array(Math.max(1, sentences));
    let start = first === 0 ? 0 : this.#sentenceEnds[first - 1]!;
    for (let s = 0; s < sentences; s++) {
      const end = this.#sentenceEnds[first + s]!;
      lengths[s] = end - start;
      for (let i = start; i < end; i++) {
        const q = slot.get(this.#terms[i]!);
        if (q !== undefined) counts[s * width + q]!++;
      }
      start = end;
    }
    const span = Math.min(PASSAGE_SENTENCES, Math.max(1, sentences));
    let best = 0;
    for (let from = 0; from + span <= Math.max(1, sentences); from++) {
      let length = headingLength;
      for (let s = from; s < from + span; s++) length += lengths[s]!;
      const norm = k1 * (1 - b + (b * length) / averageLength);
      let score = 0;
      for (let q = 0; q < width; q++) {
        let tf = heading[q]!;
        for (let s = from; s < from + span; s++) tf += counts[s * width + q]!;
        if (tf > 0) score += (query[q]!.weight * tf * (k1 + 1)) / (tf + norm);
      }
      if (score > best) best = score;
    }
    return best;
  }

  #id(term: string): number {
    let id = this.#vocabulary.get(term);
    if (id === undefined) this.#vocabulary.set(term, (id = this.#vocabulary.size));
    return id;
  }
}

/** The lengths of a chunk's windows, from its sentences' lengths: one window when it has PASSAGE_SENTENCES or fewer. */
function windowLengths(sentences: readonly number[]): number[] {
  if (sentences.length <= PASSAGE_SENTENCES) return [sentences.reduce((n, l) => n + l, 0)];
  const windows: number[] = [];
  for (let from = 0; from + PASSAGE_SENTENCES <= sentences.length; from++) {
    let length = 0;
    for (let s = from; s < from + PASSAGE_SENTENCES; s++) length += sentences[s]!;
    windows.push(length);
  }
  return windows;
}
