import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { KNOWLEDGE_LIMITS } from '../../src/domain/knowledge-base.ts';
import { DELIVERY_TXT, POLICIES_MD, base64 } from './corpus.ts';

for (const kind of STORES) {
  describe(`knowledge bases on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let otherKey: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ apiKey: otherKey } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, as = key) => h.request({ method, url, key: as, body });
    const settled = () => h.runtime.services.knowledge.settled();

    async function createHelpDesk() {
      const created = await req('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Help desk',
        knowledge_base_texts: [{ title: 'Gift cards', text: 'Gift cards never expire and can be used in the shop or online.' }],
        knowledge_base_files: [
          { file_name: 'policies.md', content_base64: base64(POLICIES_MD) },
          { file_name: 'delivery', content_type: 'text/plain; charset=utf-8', content_base64: base64(DELIVERY_TXT) },
        ],
      });
      assert.equal(created.status, 201, created.raw);
      return created.json;
    }

    it('ingests texts, Markdown and plain files in the background, then retrieves by BM25 rank', async () => {
      const created = await createHelpDesk();
      assert.match(created.knowledge_base_id, /^knowledge_base_/);
      assert.equal(created.status, 'in_progress');
      assert.deepEqual(created.knowledge_base_sources.map((s: any) => [s.type, s.title ?? s.filename, s.status]), [
        ['text', 'Gift cards', 'in_progress'],
        ['document', 'policies.md', 'in_progress'],
        ['document', 'delivery', 'in_progress'],
      ]);
      await settled();
      const got = await req('GET', `/get-knowledge-base/${created.knowledge_base_id}`);
      assert.equal(got.status, 200);
      assert.equal(got.json.status, 'complete');
      const counts = got.json.knowledge_base_sources.map((s: any) => s.chunk_count);
      assert.deepEqual(counts, [1, 4, 1], 'the Markdown file makes one chunk per section');

      const search = async (query: string, top_k?: number) => {
        const res = await req('POST', `/search-knowledge-base/${created.knowledge_base_id}`, { query, top_k });
        assert.equal(res.status, 200, res.raw);
        return res.json.chunks as Array<{ text: string; score: number; source_id: string }>;
      };
      const hours = await search('When do you open on Sunday?');
      assert.match(hours[0]!.text, /^Harbor Bikes help > Opening hours\n/, 'the headings come first');
      assert.match(hours[0]!.text, /closed/);
      const warranty = await search('how long is the warranty on the frame', 5);
      assert.match(warranty[0]!.text, /Repairs > Warranty\nFrames carry a lifetime warranty/);
      const delivery = await search('what does delivery cost outside the ring road');
      assert.match(delivery[0]!.text, /Rural addresses/);
      assert.equal(delivery[0]!.source_id, got.json.knowledge_base_sources[2].source_id);
      for (const chunks of [hours, warranty, delivery]) {
        for (const chunk of chunks) assert.ok(chunk.score > 0 && chunk.score <= 1, `score ${chunk.score}`);
        assert.deepEqual([...chunks].sort((a, b) => b.score - a.score), chunks, 'best first');
      }
      assert.ok(hours.length <= 3, 'top_k defaults to 3');
      assert.equal((await search('the and of to', 5)).length, 0, 'stopwords alone find nothing');
      assert.equal((await search('zeppelin')).length, 0);
      const listed = await req('GET', '/list-knowledge-bases');
      assert.ok(listed.json.some((kb: any) => kb.knowledge_base_id === created.knowledge_base_id));
    });

    it('ranks a large base by its rarer terms, and sees new sources at once', async () => {
      // 600 sections (one chunk each): every one says "widget", one says "gizmo417".
      const sections = Array.from({ length: 600 }, (_, i) => `## Part ${i}\n\nThe widget manual, part ${i}, covers item${i} in detail.${i === 417 ? ' The gizmo417 sits here.' : ''}\n`);
      const created = await req('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Manual',
        knowledge_base_files: [{ file_name: 'manual.md', content_base64: base64(`# Manual\n\n${sections.join('\n')}`) }],
      });
      assert.equal(created.status, 201, created.raw);
      await settled();
      const id = created.json.knowledge_base_id;
      const search = async (query: string) => {
        const res = await req('POST', `/search-knowledge-base/${id}`, { query, top_k: 3 });
        assert.equal(res.status, 200, res.raw);
        return (res.json.chunks as Array<{ text: string }>).map((chunk) => chunk.text);
      };
      const rare = await search('where is the widget gizmo417');
      assert.equal(rare.length, 1, 'only the chunk holding the rare term: the common one does not pull in the rest');
      assert.match(rare[0]!, /gizmo417/);
      assert.equal((await search('widget manual')).length, 3, 'a query of common words still finds chunks');
      assert.deepEqual(await search('sprocket'), []);
      const added = await req('POST', `/add-knowledge-base-sources/${id}`, { knowledge_base_texts: [{ title: 'Sprockets', text: 'The sprocket is sold apart from the widget.' }] });
      assert.equal(added.status, 200, added.raw);
      await settled();
      assert.match((await search('sprocket widget'))[0] ?? '', /sold apart/, 'a term counted as absent before is found once its source is in');
    });

    it('keeps a failing source in error with its reason, beside the good ones', async () => {
      const created = await req('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Mixed',
        knowledge_base_texts: [{ title: 'ok', text: 'Parking is free behind the shop.' }],
        knowledge_base_files: [
          { file_name: 'broken.txt', content_base64: Buffer.from([0xff, 0xfe, 0x00, 0xc3]).toString('base64') },
          { file_name: 'empty.md', content_base64: base64('\n\n   \n') },
        ],
      });
      assert.equal(created.status, 201);
      await settled();
      const got = (await req('GET', `/get-knowledge-base/${created.json.knowledge_base_id}`)).json;
      assert.equal(got.status, 'error');
      assert.deepEqual(got.knowledge_base_sources.map((s: any) => s.status), ['complete', 'error', 'error']);
      assert.match(got.knowledge_base_sources[1].error, /not valid UTF-8/);
      assert.match(got.knowledge_base_sources[2].error, /no text/);
      const found = await req('POST', `/search-knowledge-base/${created.json.knowledge_base_id}`, { query: 'where can I park' });
      assert.equal(found.json.chunks.length, 1);
    });

    it('adds and deletes sources, deletes bases, and keeps accounts apart', async () => {
      const created = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'Grows' });
      assert.equal(created.status, 201);
      assert.equal(created.json.status, 'complete', 'no sources: nothing to ingest');
      const id = created.json.knowledge_base_id;
      const added = await req('POST', `/add-knowledge-base-sources/${id}`, { knowledge_base_texts: [{ title: 'Loans', text: 'Loan bikes are available during repairs.' }] });
      assert.equal(added.status, 200, added.raw);
      assert.equal(added.json.status, 'in_progress');
      await settled();
      const search = (as = key) => req('POST', `/search-knowledge-base/${id}`, { query: 'loan bike during repair' }, as);
      assert.equal((await search()).json.chunks.length, 1);
      for (const [method, url, body] of [
        ['GET', `/get-knowledge-base/${id}`],
        ['POST', `/search-knowledge-base/${id}`, { query: 'loan' }],
        ['POST', `/add-knowledge-base-sources/${id}`, { knowledge_base_texts: [{ title: 'x', text: 'y' }] }],
        ['DELETE', `/delete-knowledge-base/${id}`],
      ] as const) {
        const res = await req(method, url, body, otherKey);
        assert.equal(res.status, 422, `${method} ${url} from another account`);
        assert.equal(res.json.code, 'knowledge_base_not_found');
      }
      assert.ok(!(await req('GET', '/list-knowledge-bases', undefined, otherKey)).json.some((kb: any) => kb.knowledge_base_id === id));

      const sourceId = added.json.knowledge_base_sources[0].source_id;
      assert.equal((await req('DELETE', `/delete-knowledge-base-source/${id}/source/kb_source_nope`)).json.code, 'knowledge_base_source_not_found');
      const afterDelete = await req('DELETE', `/delete-knowledge-base-source/${id}/source/${sourceId}`);
      assert.equal(afterDelete.status, 200);
      assert.deepEqual(afterDelete.json.knowledge_base_sources, []);
      assert.equal((await search()).json.chunks.length, 0, 'its chunks went with it');
      assert.equal((await req('DELETE', `/delete-knowledge-base/${id}`)).status, 204);
      assert.equal((await req('GET', `/get-knowledge-base/${id}`)).status, 422);
      assert.equal((await search()).status, 422);
    });

    it('refuses bad input with a 4xx naming the field, and writes nothing', async () => {
      const before = (await req('GET', '/list-knowledge-bases')).json.length;
      const cases: Array<[unknown, number, RegExp]> = [
        [{}, 400, /knowledge_base_name/],
        [{ knowledge_base_name: 'x'.repeat(41) }, 400, /knowledge_base_name/],
        [{ knowledge_base_name: 'a', knowledge_base_urls: ['ftp://example.com/faq.txt'] }, 400, /knowledge_base_urls\.0/],
        [{ knowledge_base_name: 'a', knowledge_base_texts: [{ title: 't' }] }, 400, /knowledge_base_texts\.0\.text|text/],
        [{ knowledge_base_name: 'a', knowledge_base_files: [{ file_name: 'x.exe', content_base64: 'AAAA' }] }, 400, /knowledge_base_files\.0/],
        [{ knowledge_base_name: 'a', knowledge_base_files: [{ file_name: 'x.md', content_base64: '%%%' }] }, 400, /content_base64/],
        [{ knowledge_base_name: 'a', knowledge_base_texts: [{ title: 't', text: 'é'.repeat(KNOWLEDGE_LIMITS.sourceBytes / 2 + 1) }] }, 413, /knowledge_base_texts\.0\.text/],
        [{ knowledge_base_name: 'a', knowledge_base_texts: Array.from({ length: 51 }, () => ({ title: 't', text: 'x' })) }, 400, /knowledge_base_texts/],
      ];
      for (const [body, status, message] of cases) {
        const res = await req('POST', '/create-knowledge-base', body);
        assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 80)}: ${res.raw.slice(0, 200)}`);
        assert.match(res.json.message, message);
      }
      assert.equal((await req('GET', '/list-knowledge-bases')).json.length, before, 'nothing written');
      const { json: kb } = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'b' });
      assert.match((await req('POST', `/add-knowledge-base-sources/${kb.knowledge_base_id}`, {})).json.message, /at least one source/);
      const searches: Array<[unknown, RegExp]> = [
        [{}, /query/],
        [{ query: '' }, /query/],
        [{ query: 'x'.repeat(KNOWLEDGE_LIMITS.queryChars + 1) }, /query/],
        [{ query: 'ok', top_k: 0 }, /top_k/],
        [{ query: 'ok', top_k: KNOWLEDGE_LIMITS.topK + 1 }, /top_k/],
      ];
      for (const [body, message] of searches) {
        const res = await req('POST', `/search-knowledge-base/${kb.knowledge_base_id}`, body);
        assert.equal(res.status, 400);
        assert.match(res.json.message, message);
      }
    });

    it('bounds the knowledge bases of an account (409) and the sources of one', async () => {
      const { apiKey } = await h.account();
      for (let i = 0; i < KNOWLEDGE_LIMITS.basesPerAccount; i++) {
        assert.equal((await req('POST', '/create-knowledge-base', { knowledge_base_name: `kb ${i}` }, apiKey)).status, 201);
      }
      const refused = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'one more' }, apiKey);
      assert.equal(refused.status, 409);
      assert.equal(refused.json.code, 'knowledge_base_limit_reached');
      const id = (await req('GET', '/list-knowledge-bases', undefined, apiKey)).json[0].knowledge_base_id;
      const fifty = Array.from({ length: KNOWLEDGE_LIMITS.sourcesPerRequest }, (_, i) => ({ title: `t${i}`, text: `word${i}` }));
      for (let added = 0; added < KNOWLEDGE_LIMITS.sourcesPerBase; added += fifty.length) {
        assert.equal((await req('POST', `/add-knowledge-base-sources/${id}`, { knowledge_base_texts: fifty }, apiKey)).status, 200);
      }
      const tooMany = await req('POST', `/add-knowledge-base-sources/${id}`, { knowledge_base_texts: [{ title: 'x', text: 'y' }] }, apiKey);
      assert.equal(tooMany.status, 409);
      assert.match(tooMany.json.message, /at most 200 sources/);
      // Deleted before its sources are ingested: ingestion skips what is gone.
      assert.equal((await req('DELETE', `/delete-knowledge-base/${id}`, undefined, apiKey)).status, 204);
      await settled();
      assert.equal((await req('GET', '/list-knowledge-bases', undefined, apiKey)).json.length, KNOWLEDGE_LIMITS.basesPerAccount - 1);
    });
  });
}
