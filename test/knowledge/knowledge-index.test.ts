import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EARLIER_TURN_WEIGHT, indexTerms, sentenceTerms, weightedQuery } from '../../src/domain/knowledge-terms.ts';
import { ChunkIndex, KnowledgeIndexCache, rankChunks } from '../../src/storage/knowledge-index.ts';
import { KnowledgeRepository } from '../../src/storage/knowledge.repository.ts';
import { chunkDocument } from '../../src/domain/knowledge-chunks.ts';
import { knowledgeContextSource } from '../../src/media/knowledge-context.ts';
import { STORES, openTestStore, type TestStore } from '../helpers/stores.ts';
import { SCATTERED_AND_TOGETHER, SCATTERED_AND_TOGETHER_QUESTION, SECTION_EVIDENCE, SECTION_EVIDENCE_QUESTION } from './corpus.ts';

describe('knowledge terms', () => {
  it("stems as Porter's algorithm does (his published examples)", () => {
    const pairs: Array<[string, string]> = [
      ['caresses', 'caress'], ['ponies', 'poni'], ['agreed', 'agre'], ['plastered', 'plaster'], ['motoring', 'motor'],
      ['conflated', 'conflat'], ['hopping', 'hop'], ['filing', 'file'], ['happy', 'happi'], ['relational', 'relat'],
      ['generalization', 'gener'], ['triplicate', 'triplic'], ['hopeful', 'hope'], ['allowance', 'allow'],
      ['adjustment', 'adjust'], ['adoption', 'adopt'], ['cease', 'ceas'], ['controll', 'control'], ['sky', 'sky'],
    ];
    for (const [word, stem] of pairs) assert.deepEqual(indexTerms(word), [stem], word);
    assert.deepEqual(indexTerms('ab'), ['ab']);
    assert.deepEqual(indexTerms('café'), ['café'], 'words beyond a-z are left as they are');
  });

  it('indexes and asks in the same stemmed terms, without stopwords or conversational padding', () => {
    assert.deepEqual(indexTerms('The server crashed while delivering'), ['server', 'crash', 'deliv']);
    const query = weightedQuery(['Hey, I was wondering: what happens when servers crash?']);
    assert.deepEqual(query, [{ term: 'server', weight: 1 }, { term: 'crash', weight: 1 }]);
  });

  it('leaves out every modal verb, quantifier and possessive pronoun, in questions and chunks alike', () => {
    const terms = weightedQuery(['How many bikes may I rent, and how much is it if the blue bike is mine? It might rain.']).map((t) => t.term);
    assert.deepEqual(terms, ['bike', 'rent', 'blue', 'rain']);
    assert.deepEqual(indexTerms('Many riders must book; much may change, but this bike shall be mine'), ['rider', 'book', 'chang', 'bike']);
  });

  it('splits a chunk into sentences at line breaks and sentence ends, with the terms indexTerms gives', () => {
    const text = 'Bikes are rented by the day. Helmets: free!\nReturn it by six; late returns cost 5.50 euros.\n\n- Locks are lent too';
    const sentences = sentenceTerms(text);
    assert.deepEqual(sentences, [['bike', 'rent', 'dai'], ['helmet'], ['free'], ['return', 'six'], ['late', 'return', 'cost', '5', '50', 'euro'], ['lock', 'lent']]);
    assert.deepEqual(sentences.flat(), indexTerms(text));
    assert.deepEqual(sentenceTerms('The. Of it. Bikes'), [['bike']], 'a sentence of stopwords only joins the next');
  });

  it("weighs the caller's earlier turn below the last, each term at its highest weight", () => {
    const query = weightedQuery(['my bike has a puncture', 'what about the warranty on the bike']);
    const weight = new Map(query.map((t) => [t.term, t.weight]));
    assert.equal(weight.get('warranti'), 1);
    assert.equal(weight.get('bike'), 1, 'in both turns: the last turn wins');
    assert.equal(weight.get('punctur'), EARLIER_TURN_WEIGHT);
  });
});

describe("a call's retrieval query", () => {
  it("hands retrieval the caller's last two turns, oldest first, so the earlier one weighs less", async () => {
    const asked: unknown[] = [];
    const source = knowledgeContextSource({
      accountId: 'acct_test',
      ids: ['kb_1'],
      searchable: ['kb_1'],
      config: {},
      retriever: { ownedBases: async (_, ids) => ids, retrieve: async (_, query) => (asked.push(query), []) },
      onFailure: (e) => assert.fail(String(e)),
    });
    const history = [
      { role: 'user' as const, content: 'hello' },
      { role: 'user' as const, content: 'my bike has a puncture' },
      { role: 'assistant' as const, content: 'Sorry to hear it.' },
      { role: 'user' as const, content: 'is that under warranty' },
    ];
    await source.contextFor({ userText: 'is that under warranty', history }, new AbortController().signal);
    assert.deepEqual(asked, [['my bike has a puncture', 'is that under warranty']]);
  });
});

describe('in-process BM25F ranking', () => {
  const chunks = [
    { id: 1, heading: 'Shop > Opening hours', text: 'We open at nine and close at six; closed on Sundays.', sourceId: 'src_1' },
    { id: 2, heading: 'Shop > Repairs', text: 'Punctures are mended while you wait. The shop is busy on Saturdays.', sourceId: 'src_1' },
    { id: 3, heading: 'Shop > Warranty', text: 'Frames carry a lifetime warranty; a punctured tube is not covered.', sourceId: 'src_1' },
  ];
  const index = new ChunkIndex(chunks);

  it('matches a word in any of its forms', () => {
    const ranked = rankChunks([index], weightedQuery(['is the shop closing on sunday']), 3);
    assert.equal(ranked[0]?.id, 1);
  });

  it('weighs a heading above the text, and an earlier turn below the last', () => {
    assert.equal(rankChunks([index], weightedQuery(['warranty for a puncture']), 3)[0]?.id, 3, 'the heading says warranty');
    assert.equal(rankChunks([index], weightedQuery(['when do you open', 'and repairs']), 3)[0]?.id, 2, 'the last turn leads');
    assert.equal(rankChunks([index], weightedQuery(['and repairs', 'when do you open']), 3)[0]?.id, 1);
  });

  it("ranks the chunk holding the question's words in one sentence above one holding them scattered (passage evidence)", () => {
    const documents = new ChunkIndex(SCATTERED_AND_TOGETHER.map((d, i) => ({ id: i + 1, heading: d.title, text: d.text, sourceId: `src_${i + 1}` })));
    const ranked = rankChunks([documents], weightedQuery([SCATTERED_AND_TOGETHER_QUESTION]), 3);
    assert.deepEqual(ranked.map((r) => r.id), [4, 3], 'Claims, then Frames');
    const alone = rankChunks([documents], weightedQuery([SCATTERED_AND_TOGETHER_QUESTION]), 3, { passageWeight: 0, sectionWeight: 0 });
    assert.deepEqual(alone.map((r) => r.id), [3, 4], 'BM25F over whole chunks puts Frames first');
  });

  it("ranks a chunk whose section answers the question above one matching as well on its own (section evidence)", () => {
    const query = weightedQuery([SECTION_EVIDENCE_QUESTION]);
    const chunks = (sources: readonly string[]) => new ChunkIndex(SECTION_EVIDENCE.map(([heading, text], i) => ({ id: i + 1, heading, text, sourceId: sources[i]! })));
    const oneSource = chunks(['src_1', 'src_1', 'src_1', 'src_1']);
    assert.deepEqual(rankChunks([oneSource], query, 2).map((r) => r.id), [3, 1], "Hire's helmet chunk: its section is about renting");
    assert.deepEqual(rankChunks([oneSource], query, 2, { sectionWeight: 0 }).map((r) => r.id), [1, 3], 'on their own words, Sales leads');
    // The same heading in another source is another section.
    const twoSources = chunks(['src_1', 'src_1', 'src_2', 'src_1']);
    assert.deepEqual(rankChunks([twoSources], query, 2).map((r) => r.id), [1, 3]);
  });

  it('does not let "many" and "may" pull in a chunk that is not about the question', () => {
    const documents = new ChunkIndex([
      { id: 1, heading: 'Parking', text: 'Many customers may park outside. Many may also leave a scooter in the yard, as many as may fit.', sourceId: 'src_1' },
      { id: 2, heading: 'Gears', text: 'Our city bikes have seven gears; the mountain bikes have twenty-one gears.', sourceId: 'src_1' },
      { id: 3, heading: 'Opening hours', text: 'We open at nine and close at six.', sourceId: 'src_1' },
      { id: 4, heading: 'Repairs', text: 'Punctures are mended while you wait.', sourceId: 'src_1' },
    ]);
    assert.deepEqual(rankChunks([documents], weightedQuery(['How many gears may a bike have?']), 3).map((r) => r.id), [2]);
  });

  it('leaves out chunks that match nothing, and ranks several bases as one collection', () => {
    assert.deepEqual(rankChunks([index], weightedQuery(['zeppelin']), 3), []);
    const other = new ChunkIndex([{ id: 10, heading: 'Rentals', text: 'Rent a bike by the day; Sundays included.', sourceId: 'src_1' }]);
    assert.deepEqual(
      rankChunks([index, other], weightedQuery(['rent on sunday']), 3).map((r) => r.id),
      [10, 1],
    );
  });

  it('forgets the least recently used bases beyond its bound, and rebuilds a base whose stamp changed', async () => {
    const cache = new KnowledgeIndexCache(5);
    let loads = 0;
    const load = async () => {
      loads++;
      return chunks;
    };
    const stamp = (n: number) => ({ sources: 1, updatedAt: n, chunks: 3 });
    await cache.index('kb_a', stamp(1), load);
    await cache.index('kb_a', stamp(1), load);
    assert.equal(loads, 1, 'built once for one content');
    await cache.index('kb_a', stamp(2), load);
    assert.equal(loads, 2, 'built again when the content changed');
    await cache.index('kb_b', stamp(1), load);
    assert.equal(cache.chunks, 3, 'a is forgotten: 6 chunks would pass the bound of 5');
    await cache.index('kb_a', stamp(2), load);
    assert.equal(loads, 4);
  });
});

for (const kind of STORES) {
  describe(`knowledge retrieval in the process on ${kind.name}`, { skip: kind.skip }, () => {
    let ts: TestStore;
    before(async () => {
      ts = await openTestStore(kind.name);
    });
    after(async () => ts?.close());

    let n = 0;
    async function base(documents: Array<{ title: string; text: string }>): Promise<{ id: string; sources: string[] }> {
      const id = `kb_${(++n).toString(16).padStart(32, '0')}`;
      const repo = new KnowledgeRepository(ts.store);
      await repo.insertBase({ id, account_id: 'acct_test', name: 'test', created_at: 1, updated_at: 1, auto_refresh: 0 });
      const sources: string[] = [];
      for (const doc of documents) sources.push(await addSource(id, doc, 10 + sources.length));
      return { id, sources };
    }
    async function addSource(baseId: string, doc: { title: string; text: string }, now: number): Promise<string> {
      const repo = new KnowledgeRepository(ts.store);
      const sourceId = `kbs_${(++n).toString(16).padStart(32, '0')}`;
      await repo.insertSources([{ id: sourceId, knowledge_base_id: baseId, type: 'text', title: doc.title, format: 'text', url: null, body: null, status: 'in_progress', error: null, created_at: now, updated_at: now }]);
      await ts.store.transaction((tx) => repo.completeSource(baseId, sourceId, chunkDocument(doc.title, doc.text, 'text'), now, tx));
      return sourceId;
    }

    it('ranks with stems on both stores alike, and every server sees a change at its next search', async () => {
      const kb = await base([
        { title: 'Opening hours', text: 'We open at nine and close at six.' },
        { title: 'Repairs', text: 'Punctures are mended while you wait.' },
      ]);
      const one = new KnowledgeRepository(ts.store);
      const two = new KnowledgeRepository(ts.store);
      const found = await one.search([kb.id], weightedQuery(['when are you closing']), 3);
      assert.deepEqual(found.map((c) => c.source_id), [kb.sources[0]]);
      assert.ok(found[0]!.score > 0 && found[0]!.score < 1);
      assert.deepEqual(await one.search([kb.id], weightedQuery(['rentals']), 3), []);
      // Another server of the store adds a source; the first finds it without being told.
      await addSource(kb.id, { title: 'Rentals', text: 'Bikes are rented by the day.' }, 50);
      assert.equal((await two.search([kb.id], weightedQuery(['renting']), 3))[0]?.text, 'Bikes are rented by the day.');
      assert.equal((await one.search([kb.id], weightedQuery(['renting']), 3))[0]?.text, 'Bikes are rented by the day.');
      await ts.store.transaction((tx) => one.deleteSource(kb.id, kb.sources[1]!, tx));
      assert.deepEqual(await two.search([kb.id], weightedQuery(['punctures']), 3), [], 'a deleted source is gone on every server');
    });

    it("ranks the chunk answering in one sentence above one holding the question's words scattered", async () => {
      const kb = await base(SCATTERED_AND_TOGETHER);
      const found = await new KnowledgeRepository(ts.store).search([kb.id], weightedQuery([SCATTERED_AND_TOGETHER_QUESTION]), 2);
      assert.deepEqual(found.map((c) => c.source_id), [kb.sources[3], kb.sources[2]], 'Claims, then Frames');
      assert.ok(found[0]!.score > found[1]!.score && found[0]!.score < 1, 'scores follow the order, within (0, 1)');
    });

    it("ranks a chunk by its section's evidence too, its section being its source's chunks under its heading", async () => {
      const id = `kb_${(++n).toString(16).padStart(32, '0')}`;
      const repo = new KnowledgeRepository(ts.store);
      await repo.insertBase({ id, account_id: 'acct_test', name: 'test', created_at: 1, updated_at: 1, auto_refresh: 0 });
      const sourceId = `kbs_${(++n).toString(16).padStart(32, '0')}`;
      await repo.insertSources([{ id: sourceId, knowledge_base_id: id, type: 'text', title: 'Harbor Bikes help', format: 'markdown', url: null, body: null, status: 'in_progress', error: null, created_at: 10, updated_at: 10 }]);
      const chunks = SECTION_EVIDENCE.map(([heading, text]) => ({ heading, text, words: text.split(/\s+/).length }));
      await ts.store.transaction((tx) => repo.completeSource(id, sourceId, chunks, 10, tx));
      const found = await repo.search([id], weightedQuery([SECTION_EVIDENCE_QUESTION]), 2);
      assert.deepEqual(found.map((c) => [c.heading, c.text]), [SECTION_EVIDENCE[2], SECTION_EVIDENCE[0]], "Hire's helmet chunk, then Sales");
    });

    it("ranks in the store when the bases hold more chunks than the process indexes", async () => {
      const kb = await base([
        { title: 'Opening hours', text: 'We open at nine and close at six.' },
        { title: 'Repairs', text: 'Punctures are mended while you wait.' },
      ]);
      const small = new KnowledgeRepository(ts.store, { maxIndexedChunks: 1 });
      const found = await small.search([kb.id], weightedQuery(['punctures mended']), 3);
      assert.deepEqual(found.map((c) => c.source_id), [kb.sources[1]]);
    });
  });
}
