/**
 * Document frequencies of query terms over a set of knowledge bases, remembered between searches.
 *
 * A search ranks every chunk that holds any of its terms, so one common term ("order" in a shop's
 * help pages) makes it rank most of the base. BM25 gives such a term almost no weight anyway (its
 * inverse document frequency is below ln 2 once it is in half the chunks), so a search leaves it
 * out and ranks only the chunks holding its rarer terms (`selectiveTerms`). That needs each term's
 * document frequency in the bases, which costs a count per term: counted once and remembered here,
 * per set of bases, until the bases' content changes.
 *
 * Content changes are seen, on every server of a store, through a stamp read with each search: the
 * bases' sources' count, their latest update and their chunks' total (one indexed aggregate). A
 * changed stamp forgets what was counted for those bases.
 */

/** What identifies the content of a set of bases: changes whenever a source is added, ingested or deleted. */
export interface ContentStamp {
  sources: number;
  updatedAt: number;
  chunks: number;
}

interface Entry {
  stamp: ContentStamp;
  /** Document frequency by term, within the bases. */
  df: Map<string, number>;
}

/** Sets of bases remembered at once (least recently used forgotten first). */
const MAX_BASE_SETS = 1_000;
/** Terms remembered per set of bases; beyond it the set's terms are forgotten and counted again. */
const MAX_TERMS_PER_SET = 20_000;

export class TermStats {
  readonly #entries = new Map<string, Entry>();

  /**
   * The document frequency of each of `terms` in the bases, counting (with `count`) only those not
   * remembered for this content.
   */
  async frequencies(baseIds: readonly string[], stamp: ContentStamp, terms: readonly string[], count: (term: string) => Promise<number>): Promise<Map<string, number>> {
    const key = [...baseIds].sort().join(',');
    let entry = this.#entries.get(key);
    if (!entry || !sameStamp(entry.stamp, stamp) || entry.df.size > MAX_TERMS_PER_SET) entry = { stamp, df: new Map() };
    this.#entries.delete(key); // re-inserted last: the most recently used
    this.#entries.set(key, entry);
    if (this.#entries.size > MAX_BASE_SETS) this.#entries.delete(this.#entries.keys().next().value!);
    const result = new Map<string, number>();
    for (const term of terms) {
      let df = entry.df.get(term);
      if (df === undefined) {
        df = await count(term);
        entry.df.set(term, df);
      }
      result.set(term, df);
    }
    return result;
  }
}

export function sameStamp(a: ContentStamp, b: ContentStamp): boolean {
  return a.sources === b.sources && a.updatedAt === b.updatedAt && a.chunks === b.chunks;
}

/**
 * Bases smaller than this are ranked by every term: ranking them all is fast, and in a small base
 * a word in half the chunks can still tell two of them apart.
 */
export const SELECTIVE_MIN_CHUNKS = 500;

/**
 * How many (term, chunk) postings a search ranks at most, rarer terms first: ranking costs about a
 * microsecond per posting, and the chunks holding the rarer terms are the candidates worth ranking.
 */
export const SELECTIVE_POSTINGS = 2_500;

/**
 * The terms worth ranking by, of `chunks` chunks. In bases of at least SELECTIVE_MIN_CHUNKS: the
 * rarest terms first, while their postings together stay within SELECTIVE_POSTINGS, and never a
 * term in more than half the chunks (BM25 weighs it near zero, and it matches most of the base);
 * when even the rarest term is that common, it alone, so a query of common words still finds its
 * best chunks. Terms found nowhere are left out.
 */
export function selectiveTerms(df: ReadonlyMap<string, number>, chunks: number): string[] {
  const found = [...df].filter(([, n]) => n > 0).sort((a, b) => a[1] - b[1]);
  if (chunks < SELECTIVE_MIN_CHUNKS) return found.map(([term]) => term);
  const kept: string[] = [];
  let postings = 0;
  for (const [term, n] of found) {
    if (kept.length > 0 && (n > chunks / 2 || postings + n > SELECTIVE_POSTINGS)) break;
    kept.push(term);
    postings += n;
  }
  return kept;
}

/** BM25's inverse document frequency of a term found in `df` of `n` chunks (Robertson-Spärck Jones, kept positive). */
export function inverseDocumentFrequency(df: number, n: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}
