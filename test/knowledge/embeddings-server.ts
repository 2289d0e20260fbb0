import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Dimensions of the test vectors. */
export const TEST_DIMENSIONS = 256;

/** Words the test embedder treats as one (the first of each group), so a synonym lands close. */
const SYNONYMS: ReadonlyArray<readonly string[]> = [
  ['refund', 'refunds', 'refunded', 'money', 'reimburse', 'reimbursed'],
  ['bicycle', 'bike', 'bikes', 'bicycles', 'cycle'],
  ['parcel', 'parcels', 'package', 'packages', 'shipment'],
];
const CANONICAL = new Map(SYNONYMS.flatMap((group) => group.map((word) => [word, group[0]!] as const)));

/**
 * The test's embedding model: a hashed bag of words (each lower-cased word, its synonym group's
 * first word for a synonym, adds 1 to the dimension its FNV-1a hash picks). Deterministic, so a
 * test can compute the ranking it expects.
 */
export function testEmbedding(text: string): number[] {
  const vector = new Array<number>(TEST_DIMENSIONS).fill(0);
  for (const raw of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const word = CANONICAL.get(raw) ?? raw;
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
    vector[(hash >>> 0) % TEST_DIMENSIONS]! += 1;
  }
  return vector;
}

export interface EmbeddingsRequest {
  model: string;
  input: string[];
  authorization: string | undefined;
}

/**
 * A local server speaking the OpenAI embeddings wire protocol (`POST /v1/embeddings`, `{model,
 * input}` -> `{data: [{embedding, index}], model, usage}`) with `testEmbedding` (or the model
 * given: the recall bench serves GloVe vectors with it), keeping every request. `fail` scripts the next answers: an HTTP status, 'hang' (never answers) or 'short' (one
 * embedding fewer than asked).
 */
export class EmbeddingsServer {
  readonly requests: EmbeddingsRequest[] = [];
  readonly fail: Array<number | 'hang' | 'short'> = [];
  /** Fails every request with this status while set. */
  down: number | null = null;
  readonly #server: Server;
  constructor(embed: (text: string) => number[] = testEmbedding) {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/embeddings') return void res.writeHead(404).end();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; input: string[] };
        this.requests.push({ model: body.model, input: body.input, authorization: req.headers.authorization });
        const failure = this.down ?? this.fail.shift();
        if (failure === 'hang') return;
        if (typeof failure === 'number') return void res.writeHead(failure, { 'content-type': 'application/json' }).end('{"error":{"message":"scripted failure"}}');
        const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: embed(text) }));
        // Answered in reverse order: the client must place each by its index.
        const answer = { object: 'list', model: body.model, data: (failure === 'short' ? data.slice(1) : data).reverse(), usage: { prompt_tokens: 0, total_tokens: 0 } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }
  close(): Promise<void> {
    return new Promise((r) => {
      this.#server.close(() => r());
      this.#server.closeAllConnections();
    });
  }
}
