import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalized, vectorBytes } from '../../src/lib/vectors.ts';
import { VectorIndex, type VectorRows } from '../../src/storage/knowledge-vectors.ts';

/** 2,500 chunks of 8 dimensions, chunk i pointing at angle i, some of another model's 4 dimensions. */
const ROWS: VectorRows = Array.from({ length: 2_500 }, (_, i) => ({
  id: i + 1,
  embedding: i % 10 === 9 ? vectorBytes(new Float32Array(4).fill(0.5)) : vectorBytes(normalized(Float32Array.from({ length: 8 }, (_, d) => Math.cos(i / 400 + d)))),
}));

function reader(rows: VectorRows, reads: number[]) {
  return async (afterId: number, limit: number) => {
    reads.push(afterId);
    return rows.filter((r) => r.id > afterId).slice(0, limit);
  };
}

function bruteForce(query: Float32Array, limit: number): number[] {
  const view = (bytes: Uint8Array) => new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  return ROWS.filter((r) => r.embedding!.byteLength === query.length * 4)
    .map((r) => ({ id: r.id, s: view(r.embedding!).reduce((sum, x, d) => sum + x * query[d]!, 0) }))
    .sort((a, b) => b.s - a.s || a.id - b.id)
    .slice(0, limit)
    .map((r) => r.id);
}

describe('the in-process vector search', () => {
  const stamp = { sources: 1, updatedAt: 1, chunks: ROWS.length };
  const query = normalized(Float32Array.from({ length: 8 }, (_, d) => Math.cos(1.7 + d)));

  it('finds the nearest chunks exactly, in pages, and keeps them until the content changes', async () => {
    const index = new VectorIndex();
    const reads: number[] = [];
    const first = (await index.nearest(['kb'], 'm', stamp, query, 5, reader(ROWS, reads)))!;
    assert.deepEqual(first.map((n) => n.id), bruteForce(query, 5));
    assert.deepEqual(reads, [-1, 1_000, 2_000], 'read in pages of 1,000 after the last id');
    assert.ok(first[0]!.similarity > 0.99 && first[0]!.similarity <= 1.0001);
    await index.nearest(['kb'], 'm', stamp, query, 5, reader(ROWS, reads));
    assert.equal(reads.length, 3, 'kept: the store is not read again');
    await index.nearest(['kb'], 'm', { ...stamp, chunks: stamp.chunks + 1 }, query, 5, reader(ROWS, reads));
    assert.equal(reads.length, 6, 'a changed stamp reads again');
  });

  it('scans a set larger than its budget page by page at every search, with the same answer', async () => {
    const index = new VectorIndex(10_000);
    const reads: number[] = [];
    const got = (await index.nearest(['kb'], 'm', stamp, query, 7, reader(ROWS, reads)))!;
    assert.deepEqual(got.map((n) => n.id), bruteForce(query, 7));
    await index.nearest(['kb'], 'm', stamp, query, 7, reader(ROWS, reads));
    assert.equal(reads.length, 6, 'never kept');
  });

  it('gives up reading at the deadline, and answers from what it keeps whatever the deadline', async () => {
    const index = new VectorIndex();
    const reads: number[] = [];
    let calls = 0;
    const slow = async (afterId: number, limit: number) => {
      calls++;
      return reader(ROWS, reads)(afterId, limit);
    };
    assert.equal(await index.nearest(['kb'], 'm', stamp, query, 5, slow, performance.now() - 1), null);
    assert.equal(calls, 0);
    assert.ok(await index.nearest(['kb'], 'm', stamp, query, 5, slow));
    assert.deepEqual((await index.nearest(['kb'], 'm', stamp, query, 5, slow, performance.now() - 1))!.map((n) => n.id), bruteForce(query, 5));
    assert.equal(calls, 3);
  });

  it('compares only vectors of the query\'s dimensions', async () => {
    const got = (await new VectorIndex().nearest(['kb'], 'm', stamp, normalized(new Float32Array([1, 0, 0, 0])), 300, reader(ROWS, [])))!;
    assert.equal(got.length, 250);
    assert.ok(got.every((n) => n.id % 10 === 0));
  });
});
