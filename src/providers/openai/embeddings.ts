import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { ProviderError } from '../errors.ts';
import { post, readBounded, type OpenAiEndpoint } from './http.ts';
import { normalized } from '../../lib/vectors.ts';

export interface OpenAiEmbeddingsOptions extends OpenAiEndpoint {
  /** The model named in every request, e.g. 'text-embedding-3-small'. */
  model: string;
}

/** Texts in one request. */
export const EMBEDDING_BATCH = 64;
/** Characters of one text sent (a chunk is about 2,500; a query is bounded before). */
export const MAX_EMBEDDED_CHARS = 8_000;
/** Longest vector taken; more is a broken answer. */
export const MAX_DIMENSIONS = 4_096;
/** Bytes of one answer (a batch of EMBEDDING_BATCH vectors of MAX_DIMENSIONS as JSON fits). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** Attempts after the first on retryable failures (network, 408/409/429/5xx), documents only. */
const DOCUMENT_RETRIES = 3;

const PROVIDER = 'openai-embeddings';

/**
 * An OpenAI-compatible embeddings endpoint: `POST {base}/embeddings` with `{model, input: [...]}`,
 * answered by `{data: [{embedding, index}]}`. Every answer is checked (one vector per input, each
 * index once, finite numbers, one dimension for all) and its vectors scaled to unit length. It is
 * the knowledge service's `Embedder` (src/domain/knowledge-embeddings.ts).
 */
export class OpenAiEmbeddings {
  readonly model: string;
  readonly #o: OpenAiEmbeddingsOptions;

  constructor(options: OpenAiEmbeddingsOptions) {
    this.#o = options;
    this.model = options.model;
  }

  async embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += EMBEDDING_BATCH) {
      const batch = await this.#request(texts.slice(i, i + EMBEDDING_BATCH), { ...this.#o, maxRetries: this.#o.maxRetries ?? DOCUMENT_RETRIES }, signal);
      if (vectors.length > 0 && batch[0]!.length !== vectors[0]!.length) throw new ProviderError('embeddings', PROVIDER, 'vectors of different dimensions in one document');
      vectors.push(...batch);
    }
    return vectors;
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const [vector] = await this.#request([text], { ...this.#o, maxRetries: 0 }, signal);
    return vector!;
  }

  async #request(texts: readonly string[], endpoint: OpenAiEndpoint, signal?: AbortSignal): Promise<Float32Array[]> {
    const body = JSON.stringify({ model: this.model, input: texts.map((t) => t.slice(0, MAX_EMBEDDED_CHARS)) });
    const res = await post('embeddings', PROVIDER, endpoint, '/embeddings', body, { 'content-type': 'application/json', accept: 'application/json' }, signal);
    const text = (await readBounded(res, MAX_ANSWER_BYTES, signal, false, 'embeddings', PROVIDER)).toString('utf8');
    const parsed = parseBoundedJson(text, { maxDepth: 8 });
    if (!parsed.ok) throw new ProviderError('embeddings', PROVIDER, `malformed answer (it ${parsed.problem})`);
    return vectorsOf(parsed.value, texts.length);
  }
}

/** The `count` vectors of an answer, in input order; a ProviderError when it is not that. */
function vectorsOf(answer: unknown, count: number): Float32Array[] {
  const broken = (why: string) => new ProviderError('embeddings', PROVIDER, `malformed answer (${why})`);
  const data = typeof answer === 'object' && answer !== null ? (answer as { data?: unknown }).data : undefined;
  if (!Array.isArray(data) || data.length !== count) throw broken(`expected ${count} embeddings`);
  const vectors: Array<Float32Array | undefined> = new Array(count);
  let dimensions = -1;
  data.forEach((item: unknown, position) => {
    const { index = position, embedding } = (typeof item === 'object' && item !== null ? item : {}) as { index?: unknown; embedding?: unknown };
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count || vectors[index as number]) throw broken('an index missing, repeated or out of range');
    if (!Array.isArray(embedding) || embedding.length === 0 || embedding.length > MAX_DIMENSIONS) throw broken(`an embedding not a list of 1-${MAX_DIMENSIONS} numbers`);
    if (dimensions !== -1 && embedding.length !== dimensions) throw broken('embeddings of different dimensions');
    dimensions = embedding.length;
    if (!embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) throw broken('an embedding holding something else than numbers');
    vectors[index as number] = normalized(Float32Array.from(embedding as number[]));
  });
  return vectors as Float32Array[];
}
