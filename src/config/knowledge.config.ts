import type { EnvReader } from './env-reader.ts';
import type { OpenAiEmbeddingsOptions } from '../providers/openai/embeddings.ts';

/**
 * Knowledge-base retrieval (docs/knowledge-bases.md). Lexical and offline unless an embeddings
 * endpoint is configured:
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | EMBEDDINGS_BASE_URL | (none: lexical retrieval only) | OpenAI-compatible embeddings base URL, e.g. https://api.openai.com/v1 |
 * | EMBEDDINGS_API_KEY | (none) | Bearer key of the embeddings endpoint |
 * | EMBEDDINGS_MODEL | text-embedding-3-small | the model chunks and queries are embedded with |
 * | EMBEDDINGS_TIMEOUT_MS | 10000 | per ingestion request until the answer's headers; 3 retries on timeouts and 5xx |
 */
export interface KnowledgeConfig {
  /** The embeddings endpoint, or null for lexical retrieval only. */
  readonly embeddings: OpenAiEmbeddingsOptions | null;
}

export function readKnowledgeConfig(reader: EnvReader): KnowledgeConfig {
  if (reader.optional('EMBEDDINGS_BASE_URL') === null) return { embeddings: null };
  const apiKey = reader.optional('EMBEDDINGS_API_KEY');
  return {
    embeddings: {
      baseUrl: reader.url('EMBEDDINGS_BASE_URL', ''),
      model: reader.string('EMBEDDINGS_MODEL', 'text-embedding-3-small'),
      timeoutMs: reader.integer('EMBEDDINGS_TIMEOUT_MS', 10_000, 500, 300_000),
      ...(apiKey === null ? {} : { apiKey }),
    },
  };
}
