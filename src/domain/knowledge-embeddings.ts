/**
 * Hybrid retrieval (issue 29): chunks embedded by an OpenAI-compatible embeddings endpoint are
 * ranked by vector similarity beside the lexical rank, and the two rankings are fused by reciprocal
 * rank fusion. Pure: the endpoint is an `Embedder` the composition root hands in.
 */

/** Turns texts into vectors; vectors of different `model`s are never compared. */
export interface Embedder {
  /** The model named in every request, stored with each chunk's vector. */
  readonly model: string;
  /**
   * The documents' vectors, in order, each of unit length; batched and retried by the
   * implementation. Throws when the endpoint fails or answers something else than one vector per text.
   */
  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** The query's vector, of unit length, asked once (no retry: a turn is waiting). */
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
}

/** Reciprocal rank fusion's constant: a document at rank r (from 1) adds 1 / (k + r). */
export const RRF_K = 60;

/** How many candidates each ranking contributes to the fusion. */
export const FUSION_CANDIDATES = 50;

/**
 * Reciprocal rank fusion of rankings of chunk ids (best first): each id scores the sum of
 * 1 / (k + rank) over the rankings holding it. Best first, ties by the first ranking's order, then
 * by id. `score` is that sum divided by its most (first in every ranking), so it lies in (0, 1].
 */
export function fuseRanks(rankings: ReadonlyArray<readonly number[]>, k = RRF_K): Array<{ id: number; score: number }> {
  const sums = new Map<number, number>();
  for (const ranking of rankings) ranking.forEach((id, index) => sums.set(id, (sums.get(id) ?? 0) + 1 / (k + index + 1)));
  const best = rankings.length / (k + 1);
  const first = new Map((rankings[0] ?? []).map((id, index) => [id, index]));
  return [...sums]
    .map(([id, sum]) => ({ id, score: sum / best }))
    .sort((a, b) => b.score - a.score || (first.get(a.id) ?? Infinity) - (first.get(b.id) ?? Infinity) || a.id - b.id);
}
