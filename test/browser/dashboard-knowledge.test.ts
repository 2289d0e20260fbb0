/**
 * The dashboard's Knowledge bases page in real Chromium against the real server (child process):
 * create a base from a text and a Markdown file, follow it to complete, search it and see the
 * chunk and its score; add a file that fails (not UTF-8) and see its error, delete that source;
 * link the base to a service-LLM agent from the agent's page (knowledge_base_ids and kb_config
 * saved on its LLM) and see the agent under the base; delete the base. Screenshots at 1280 and
 * 390 px, nothing wider than 390 px; no console errors but the API's answers the test provokes.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, assertFitsWidth, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { type WebServer, startWebServer } from './server.ts';

/** Screenshots of the page at 1280 and 390 px; at 390 px nothing may scroll sideways. */
async function bothWidths(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshot(page, `${name}-1280`);
  await page.setViewportSize({ width: 390, height: 844 });
  await assertFitsWidth(page, 390);
  await screenshot(page, `${name}-390`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

describe('dashboard knowledge bases', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 120_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser({ microphoneWav: await speechWav(path.join(ARTIFACTS_DIR, 'knowledge-microphone.wav'), 'hello', 100, 100) });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('create from a text and a file, search, a failing source, link to an agent, delete', async () => {
    const llm = await web.api('POST', '/create-service-llm', { general_prompt: 'You answer questions about the shop.' });
    assert.equal(llm.status, 201, JSON.stringify(llm.json));
    const agent = await web.api('POST', '/create-agent', { agent_name: 'Shop line', response_engine: { type: 'service_llm', llm_id: llm.json.llm_id } });
    assert.equal(agent.status, 201, JSON.stringify(agent.json));
    const agentId: string = agent.json.agent_id;

    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.click('a[data-nav="knowledge-bases"]');
    await page.waitForSelector('#knowledge-bases-empty');

    // A new base from a text and a Markdown file.
    await page.fill('#kb-new-name', 'Harbor Bikes');
    await page.fill('#kb-new-text-title-0', 'Opening hours');
    await page.fill('#kb-new-text-0', 'Our shop on Quay Street opens at nine and closes at six, Monday to Saturday.');
    await page.setInputFiles('#kb-new-files', { name: 'returns.md', mimeType: 'text/markdown', buffer: Buffer.from('# Returns\n\nBikes may be returned within thirty days with the receipt.\n') });
    await bothWidths(page, 'dashboard-knowledge-new');
    await page.click('#kb-new-submit');
    await page.waitForSelector('#kb-sources');
    const kbId = /#\/knowledge-bases\/([^/]+)$/.exec(page.url())?.[1];
    assert.ok(kbId?.startsWith('knowledge_base_'), page.url());
    // The page follows ingestion to the end, without a reload.
    await page.waitForSelector('#kb-status .badge.complete', { timeout: 15_000 });
    assert.equal(await page.locator('#kb-sources tbody tr').count(), 2);
    assert.match((await page.textContent('#kb-sources')) ?? '', /Opening hours.*text.*complete.*1/s);
    assert.match((await page.textContent('#kb-sources')) ?? '', /returns\.md.*document.*complete/s);

    // Search: the chunk a call would retrieve, with its score and source.
    await page.fill('#kb-search-query', 'When does the shop open?');
    await page.click('#kb-search-submit');
    await page.waitForSelector('#kb-search-results li');
    const first = (await page.textContent('#kb-search-results li:first-child')) ?? '';
    assert.match(first, /^\s*[\d.e-]+ · Opening hours/);
    assert.match(first, /opens at nine/);
    const api = (await web.api('POST', `/search-knowledge-base/${kbId}`, { query: 'When does the shop open?', top_k: 3 })).json;
    assert.ok(first.startsWith(`${Number(api.chunks[0].score.toPrecision(3))} ·`), `the score shown is the API's (${api.chunks[0].score}): ${first}`);
    await bothWidths(page, 'dashboard-knowledge-base');

    // A file that is not UTF-8 fails with its error shown; deleting it leaves the base complete.
    await page.setInputFiles('#kb-add-files', { name: 'broken.txt', mimeType: 'text/plain', buffer: Buffer.from([0xff, 0xfe, 0xfd, 0x80]) });
    await page.click('#kb-add-submit');
    await page.waitForSelector('#kb-status .badge.error', { timeout: 15_000 });
    const broken = page.locator('#kb-sources tbody tr', { hasText: 'broken.txt' });
    assert.match((await broken.locator('.source-error').textContent()) ?? '', /UTF-8/);
    await broken.locator('button[data-action="delete-source"]').click();
    await page.waitForSelector('#kb-status .badge.complete');
    assert.equal((await web.api('GET', `/get-knowledge-base/${kbId}`)).json.knowledge_base_sources.length, 2);

    // Link it to the agent: saved on the agent's service LLM.
    await page.goto(`${web.baseUrl}/dashboard#/agents/${agentId}`);
    await page.check(`#kb-link input[data-kb="${kbId}"]`);
    await page.fill('#kb-top-k', '2');
    await page.fill('#kb-filter-score', '0.1');
    await page.click('#kb-link-save');
    await page.waitForSelector('#kb-link-saved');
    const linked = (await web.api('GET', `/get-service-llm/${llm.json.llm_id}`)).json;
    assert.deepEqual([linked.knowledge_base_ids, linked.kb_config], [[kbId], { top_k: 2, filter_score: 0.1 }]);
    await bothWidths(page, 'dashboard-agent-knowledge');
    await page.goto(`${web.baseUrl}/dashboard#/knowledge-bases/${kbId}`);
    await page.waitForSelector(`#kb-used-by a[href="#/agents/${agentId}"]`);

    // Delete the base.
    await page.click('#kb-delete');
    await page.click('#kb-delete-confirm');
    await page.waitForSelector('#knowledge-bases-empty');
    await eventually(async () => (await web.api('GET', '/list-knowledge-bases')).json.length === 0, 5_000, 'the base deleted');
    assert.deepEqual(browser.errors, []);
  });
});
