import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AUTO_REFRESH_INTERVAL_MS, KNOWLEDGE_LIMITS } from '../../src/domain/knowledge-base.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { POLICIES_MD, base64 } from './corpus.ts';
import { flateBombPdf, writePdf } from './pdf-fixtures.ts';

/** A help page with the noise real pages carry: scripts, styles, navigation, a footer. */
const HELP_HTML = `<!doctype html>
<html><head><title>Harbor Bikes | Returns</title>
<style>.x { content: "STYLEWORD" }</style>
<script>window.secretToken = "SCRIPTWORD"; console.log("SCRIPTWORD")</script></head>
<body><nav><a href="/">Home</a><ul><li>NAVWORD shop</li></ul></nav>
<header><p>Harbor Bikes HEADERWORD</p></header>
<main><h1>Returns</h1><p>Bicycles come back within <b>30 days</b> &amp; unridden.</p>
<h2>Trade-in</h2><p>We take old bicycles as a trade-in toward a new frame.</p>
<script type="application/ld+json">{"SCRIPTWORD": true}</script></main>
<footer>FOOTERWORD copyright</footer></body></html>`;

const PARTS_MD = `# Parts\n\n## Chains\nChains wear out after about 3000 kilometres; we replace them for 30 euros.\n`;
const NOTES_TXT = `Storage\n\nWinter storage of a bicycle costs 10 euros a month in our cellar.`;
const MANUAL_PDF = writePdf([['Saddle fitting', 'A saddle fitting takes twenty minutes and is free with every bicycle.'], ['Lights', 'Dynamo lights are fitted in an hour.']]);

for (const kind of STORES) {
  describe(`knowledge base sources from URLs, HTML and PDF on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let server: http.Server;
    let base: string;
    let changing: string | null = 'Tandem bicycles are rented by the hour.';
    before(async () => {
      // The allow list lets the tests' server on 127.0.0.1 be fetched; ::1 and everything else stay refused.
      h = await startHarness(kind.name, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
      ({ apiKey: key } = await h.account());
      server = http.createServer((req, res) => {
        const send = (type: string, body: string | Buffer) => res.writeHead(200, { 'content-type': type }).end(body);
        switch (req.url) {
          case '/returns.html':
            return send('text/html; charset=utf-8', HELP_HTML);
          case '/parts.md':
            return send('text/plain; charset=utf-8', PARTS_MD);
          case '/storage':
            return send('text/plain', NOTES_TXT);
          case '/manual':
            return send('application/pdf', MANUAL_PDF);
          case '/latin1.html':
            return send('text/html; charset=iso-8859-1', Buffer.from('<h1>Caf\xe9 hours</h1><p>The caf\xe9 serves espresso.</p>', 'latin1'));
          case '/logo.png':
            return send('image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47]));
          case '/huge.txt':
            return send('text/plain', Buffer.alloc(KNOWLEDGE_LIMITS.urlBytes + 1, 0x61));
          case '/changing':
            return changing === null ? res.writeHead(404).end() : send('text/plain', changing);
          case '/moved':
            return res.writeHead(302, { location: `http://[::1]:${(server.address() as AddressInfo).port}/storage` }).end();
          default:
            return res.writeHead(404).end();
        }
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await h.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const req = (method: 'GET' | 'POST', url: string, body?: unknown) => h.request({ method, url, key, body });
    const search = async (id: string, query: string) => {
      const res = await req('POST', `/search-knowledge-base/${id}`, { query, top_k: 5 });
      assert.equal(res.status, 200, res.raw);
      return res.json.chunks as Array<{ text: string; source_id: string }>;
    };

    it('fetches HTML, Markdown, plain-text and PDF URLs in the background and retrieves from them', async () => {
      const urls = [`${base}/returns.html`, `${base}/parts.md`, `${base}/storage`, `${base}/manual`, `${base}/latin1.html`];
      const created = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'Web help', knowledge_base_urls: urls });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(created.json.knowledge_base_sources.map((s: any) => [s.type, s.url, s.status]), urls.map((url) => ['url', url, 'in_progress']));
      await h.runtime.services.knowledge.settled();
      const id = created.json.knowledge_base_id;
      const got = (await req('GET', `/get-knowledge-base/${id}`)).json;
      assert.equal(got.status, 'complete', JSON.stringify(got.knowledge_base_sources));
      assert.ok(got.knowledge_base_sources.every((s: any) => s.chunk_count > 0));

      const returns = await search(id, 'can I bring a bicycle back after 30 days');
      assert.match(returns[0]!.text, /^Returns\nBicycles come back within 30 days & unridden\./, 'the page heading heads the chunk, entities decoded');
      assert.match((await search(id, 'trade-in old bicycles'))[0]!.text, /^Returns > Trade-in\n/);
      assert.match((await search(id, 'when do chains wear out'))[0]!.text, /^Parts > Chains\n/, 'a .md served as text/plain is read as Markdown');
      assert.match((await search(id, 'winter storage cellar'))[0]!.text, /10 euros a month/);
      const saddle = await search(id, 'how long does a saddle fitting take');
      assert.match(saddle[0]!.text, /twenty minutes/);
      assert.match((await search(id, 'dynamo lights'))[0]!.text, /fitted in an hour/, 'the second page of the PDF');
      assert.match((await search(id, 'espresso'))[0]!.text, /^Café hours\n/, 'the charset of the Content-Type is honoured');
      for (const noise of ['SCRIPTWORD', 'STYLEWORD', 'NAVWORD', 'HEADERWORD', 'FOOTERWORD', 'secretToken']) {
        assert.deepEqual(await search(id, noise), [], `${noise} is in no chunk`);
      }
    });

    it('ingests HTML and PDF files', async () => {
      const created = await req('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Files',
        knowledge_base_files: [
          { file_name: 'returns.html', content_base64: base64(HELP_HTML) },
          { file_name: 'manual', content_type: 'application/pdf', content_base64: MANUAL_PDF.toString('base64') },
          { file_name: 'policies.md', content_base64: base64(POLICIES_MD) },
        ],
      });
      assert.equal(created.status, 201, created.raw);
      await h.runtime.services.knowledge.settled();
      const id = created.json.knowledge_base_id;
      const got = (await req('GET', `/get-knowledge-base/${id}`)).json;
      assert.equal(got.status, 'complete', JSON.stringify(got.knowledge_base_sources));
      assert.match((await search(id, 'trade-in old bicycles'))[0]!.text, /^Returns > Trade-in\n/);
      assert.match((await search(id, 'saddle fitting'))[0]!.text, /twenty minutes/);
      assert.deepEqual(await search(id, 'SCRIPTWORD'), []);
    });

    it('fails each bad source with its own error and keeps the good ones', async () => {
      const created = await req('POST', '/create-knowledge-base', {
        knowledge_base_name: 'Bad',
        knowledge_base_urls: [`${base}/gone`, `${base}/moved`, `${base}/huge.txt`, `${base}/logo.png`, `${base}/storage`],
        knowledge_base_files: [
          { file_name: 'broken.pdf', content_base64: Buffer.from('%PDF-1.4\nthis is not a PDF at all\n%%EOF\n').toString('base64') },
          { file_name: 'page.html', content_base64: Buffer.from([0x3c, 0x70, 0x3e, 0xff, 0xfe]).toString('base64') },
          // 100 MB of spaces in one Flate stream, about 100 KB compressed.
          { file_name: 'bomb.pdf', content_base64: flateBombPdf(100).toString('base64') },
        ],
      });
      assert.equal(created.status, 201, created.raw);
      await h.runtime.services.knowledge.settled();
      const got = (await req('GET', `/get-knowledge-base/${created.json.knowledge_base_id}`)).json;
      assert.equal(got.status, 'error');
      const errors = Object.fromEntries(got.knowledge_base_sources.map((s: any) => [s.url ?? s.filename, [s.status, s.error]]));
      assert.deepEqual(errors[`${base}/gone`], ['error', 'HTTP 404.']);
      assert.deepEqual(errors[`${base}/moved`], ['error', 'destination refused (rule: loopback)'], 'a redirect to [::1] is refused');
      assert.deepEqual(errors[`${base}/huge.txt`], ['error', `The document is larger than ${KNOWLEDGE_LIMITS.urlBytes} bytes.`]);
      assert.deepEqual(errors[`${base}/logo.png`], ['error', 'The address answered with Content-Type image/png, which is not HTML, Markdown, plain text or PDF.']);
      assert.deepEqual(errors[`${base}/storage`], ['complete', null]);
      assert.equal(errors['broken.pdf']![0], 'error');
      assert.match(errors['broken.pdf']![1], /^The PDF could not be read/);
      assert.deepEqual(errors['page.html'], ['error', 'The document is not valid UTF-8 text.']);
      assert.deepEqual(errors['bomb.pdf'], ['error', `The PDF's compressed streams inflate to more than ${KNOWLEDGE_LIMITS.pdfInflatedBytes} bytes.`]);
    });

    it('fetches the URLs of an enable_auto_refresh knowledge base again every 12 hours, keeping the last good chunks', async () => {
      const make = async (enable_auto_refresh: boolean) => {
        const created = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'Rentals', knowledge_base_urls: [`${base}/changing`], enable_auto_refresh });
        assert.equal(created.status, 201, created.raw);
        assert.equal(created.json.enable_auto_refresh, enable_auto_refresh);
        return created.json.knowledge_base_id as string;
      };
      const refreshing = await make(true);
      const fixed = await make(false);
      await h.runtime.services.knowledge.settled();
      const says = async (id: string) => (await search(id, 'tandem unicycle bicycles rented')).map((c) => c.text).join(' ');
      assert.match(await says(refreshing), /Tandem/);
      changing = 'Unicycles are rented by the day.';
      assert.equal(await h.runtime.services.knowledge.refreshDue(), 0, 'not due yet');
      h.clock.advance(AUTO_REFRESH_INTERVAL_MS + 1);
      assert.equal(await h.runtime.services.knowledge.refreshDue(), 1, 'only the auto-refreshing base');
      assert.equal(await h.runtime.services.knowledge.refreshDue(), 0, 'refreshed once');
      assert.match(await says(refreshing), /^[^]*Unicycles are rented by the day\.$/);
      assert.doesNotMatch(await says(refreshing), /Tandem/);
      assert.match(await says(fixed), /Tandem/);
      const got = (await req('GET', `/get-knowledge-base/${refreshing}`)).json;
      assert.equal(got.last_refreshed_timestamp, h.clock.now());
      // The page is gone: the last good chunks stay, the source stays complete, and it is tried again later.
      changing = null;
      h.clock.advance(AUTO_REFRESH_INTERVAL_MS + 1);
      assert.equal(await h.runtime.services.knowledge.refreshDue(), 0);
      assert.match(await says(refreshing), /Unicycles/);
      assert.equal((await req('GET', `/get-knowledge-base/${refreshing}`)).json.status, 'complete');
      changing = 'Cargo bikes are rented by the week.';
      h.clock.advance(AUTO_REFRESH_INTERVAL_MS + 1);
      assert.equal(await h.runtime.services.knowledge.refreshDue(), 1);
      assert.match((await search(refreshing, 'cargo bikes'))[0]!.text, /by the week/);
      const bad = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'x', enable_auto_refresh: 'yes' });
      assert.equal(bad.status, 400);
      assert.match(bad.json.message, /enable_auto_refresh/);
    });

    it('refuses URLs it may never fetch with a 400 naming the field, and writes nothing', async () => {
      const before = (await req('GET', '/list-knowledge-bases')).json.length;
      const cases: Array<[unknown, RegExp]> = [
        [['ftp://example.com/a.txt'], /knowledge_base_urls\.0 must be an absolute http or https URL/],
        [['not a url'], /knowledge_base_urls\.0/],
        [[`${base}/storage`, 'http://169.254.169.254/latest/meta-data/'], /knowledge_base_urls\.1 is not an address the server may fetch/],
        [['http://[::1]/'], /knowledge_base_urls\.0 is not an address/],
        [['http://localhost/'], /knowledge_base_urls\.0 is not an address/],
        [['http://user:secret@example.com/'], /knowledge_base_urls\.0 must not contain a user name/],
        [[`https://example.com/${'a'.repeat(KNOWLEDGE_LIMITS.urlChars)}`], /knowledge_base_urls/],
        [Array.from({ length: KNOWLEDGE_LIMITS.sourcesPerRequest + 1 }, (_, i) => `https://example.com/${i}`), /knowledge_base_urls/],
      ];
      for (const [urls, message] of cases) {
        const res = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'x', knowledge_base_urls: urls });
        assert.equal(res.status, 400, res.raw);
        assert.match(res.json.message, message);
      }
      assert.equal((await req('GET', '/list-knowledge-bases')).json.length, before);
      const { json: kb } = await req('POST', '/create-knowledge-base', { knowledge_base_name: 'later' });
      const added = await req('POST', `/add-knowledge-base-sources/${kb.knowledge_base_id}`, { knowledge_base_urls: [`${base}/storage`] });
      assert.equal(added.status, 200, added.raw);
      assert.equal(added.json.knowledge_base_sources[0].type, 'url');
      await h.runtime.services.knowledge.settled();
      assert.match((await search(kb.knowledge_base_id, 'winter storage'))[0]!.text, /cellar/);
    });
  });
}
