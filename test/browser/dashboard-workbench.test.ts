/**
 * The dashboard's Knowledge bases page and an agent's Tests tab in real Chromium against the real
 * server (child process), one server and one browser for both.
 *
 * Knowledge bases: create a base from a text and a Markdown file, follow it to complete, search it
 * and see the chunk and its score; add a file that fails (not UTF-8) and see its error, delete
 * that source; link the base to a service-LLM agent from the agent's page (knowledge_base_ids and
 * kb_config saved on its LLM) and see the agent under the base; delete the base.
 *
 * Tests tab: a test case built with the form (a script turn, a function mock, assertions of three
 * kinds) whose JSON tab holds exactly what the form made and round-trips unchanged; a second case
 * written in the JSON tab with a deliberately failing assertion; Run all, then one case passed and
 * the other failed with its first failing assertion highlighted (expected and actual), the
 * transcript shown; the run in the history under its agent version; a case deleted.
 *
 * Screenshots of each page at 1280 and 390 px, nothing wider than 390 px; no console errors.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, assertFitsWidth, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { type WebServer, createDemoAgent, startWebServer } from './server.ts';

/** Screenshots of the page at 1280 and 390 px; at 390 px nothing may scroll sideways. */
async function bothWidths(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshot(page, `${name}-1280`);
  await page.setViewportSize({ width: 390, height: 844 });
  await assertFitsWidth(page, 390);
  await screenshot(page, `${name}-390`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Waits for the case editor to say it saved; its error, if it shows one instead, fails the test. */
async function saved(page: Page): Promise<void> {
  await page.waitForSelector('#case-saved, #case-error');
  assert.equal(await page.locator('#case-error').count(), 0, (await page.locator('#case-error').textContent({ timeout: 100 }).catch(() => '')) ?? '');
}

describe('dashboard knowledge bases and agent tests', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser({ microphoneWav: await speechWav(path.join(ARTIFACTS_DIR, 'workbench-microphone.wav'), 'hello', 100, 100) });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('knowledge bases: create from a text and a file, search, a failing source, link to an agent, delete', async () => {
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

  test('agent tests: a case through the form, one through its JSON, run all, a pass and a highlighted failure, the history', async () => {
    // The flow: greet; "appointment" or "book" -> book ("Your appointment is booked. Goodbye."), else -> bye.
    const { agentId } = await createDemoAgent(web, 'Front desk');
    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.waitForSelector('#calls'); // signed in: a page opened before that is the sign-in form
    await page.goto(`${web.baseUrl}/dashboard#/agents/${agentId}`);
    await page.click('#agent-tab-tests');
    await page.waitForSelector('#test-cases-empty');

    // The form: name, the script's turn, a mock, three assertions.
    await page.click('#new-case');
    await page.fill('#case-name', 'books an appointment');
    await page.fill('#turn-0-text', 'I would like to book an appointment');
    await page.click('#case-add-mock');
    await page.fill('#mock-0-name', 'lookup_order');
    await page.fill('#mock-0-response', '{"order": {"status": "shipped"}}');
    await page.fill('#mock-0-delay', '100');
    await page.selectOption('#assertion-0-type', 'node_path');
    await page.fill('#assertion-0-node_ids', 'greet, book');
    await page.click('#case-add-assertion');
    await page.selectOption('#assertion-1-type', 'transcript_contains');
    await page.fill('#assertion-1-text', 'appointment is booked');
    await page.selectOption('#assertion-1-role', 'agent');
    await page.click('#case-add-assertion');
    await page.selectOption('#assertion-2-type', 'tool_not_called');
    await page.fill('#assertion-2-name', 'lookup_order');
    await bothWidths(page, 'dashboard-agent-tests-form');

    // The JSON tab holds exactly what the form made; back to the form and again, it is unchanged.
    const expected = {
      name: 'books an appointment',
      agent_id: agentId,
      mode: 'text',
      caller: { script: [{ say: 'I would like to book an appointment' }] },
      assertions: [
        { type: 'node_path', node_ids: ['greet', 'book'] },
        { type: 'transcript_contains', text: 'appointment is booked', role: 'agent' },
        { type: 'tool_not_called', name: 'lookup_order' },
      ],
      tool_mocks: { lookup_order: { response: { order: { status: 'shipped' } }, delay_ms: 100 } },
    };
    await page.click('#case-tab-json');
    const json = await page.inputValue('#case-json');
    assert.deepEqual(JSON.parse(json), expected);
    await page.click('#case-tab-form');
    assert.equal(await page.inputValue('#assertion-0-node_ids'), 'greet, book');
    assert.equal(await page.inputValue('#mock-0-response'), '{"order":{"status":"shipped"}}');
    await page.click('#case-tab-json');
    assert.equal(await page.inputValue('#case-json'), json, 'form -> JSON -> form -> JSON changes nothing');
    await page.click('#case-save');
    await saved(page);
    const stored = (await web.api('GET', `/list-test-cases?agent_id=${agentId}`)).json;
    assert.equal(stored.length, 1);
    assert.deepEqual([stored[0].caller, stored[0].assertions, stored[0].tool_mocks], [expected.caller, expected.assertions, expected.tool_mocks]);

    // A second case, written in the JSON tab, whose last assertion fails on purpose.
    await page.click('#new-case');
    await page.click('#case-tab-json');
    await page.fill('#case-json', JSON.stringify({
      name: 'says goodbye otherwise',
      agent_id: agentId,
      caller: { script: [{ say: 'what is the weather' }] },
      assertions: [{ type: 'node_reached', node_id: 'bye' }, { type: 'node_reached', node_id: 'book' }, { type: 'max_turns', value: 0 }],
    }));
    await page.click('#case-save');
    await saved(page);
    await page.waitForSelector('#test-cases tbody tr:nth-child(2)');

    // Run all: one passes, the other fails with its first failing assertion highlighted.
    await page.click('#run-all');
    await page.waitForSelector('#run-results[data-status="complete"]', { timeout: 30_000 });
    assert.match((await page.textContent('#run-results > p')) ?? '', /complete\s*1 passed, 1 failed · version 1/);
    const passing = page.locator('.case-result', { hasText: 'books an appointment' });
    assert.equal(await passing.locator('summary .badge').textContent(), 'passed');
    const failing = page.locator('.case-result', { hasText: 'says goodbye otherwise' });
    assert.equal(await failing.locator('summary .badge').textContent(), 'failed');
    const highlighted = failing.locator('li.first-failure');
    assert.equal(await highlighted.count(), 1, 'one assertion highlighted');
    assert.equal(await highlighted.getAttribute('data-assertion'), '1', 'the first that failed, not the passing one before it nor the failing one after');
    assert.match((await highlighted.textContent()) ?? '', /node_reached.*expected.*"book".*actual/s);
    assert.match((await failing.locator('.transcript').textContent()) ?? '', /what is the weather.*Goodbye/s);
    await bothWidths(page, 'dashboard-agent-tests-results');

    // The history, under the version the run played.
    await page.waitForSelector('#test-runs [data-version="version 1"] tr[data-run] .badge.complete');

    // Delete the failing case.
    await page.locator('#test-cases tbody tr', { hasText: 'says goodbye otherwise' }).locator('button[data-action="delete-case"]').click();
    await eventually(async () => (await page.locator('#test-cases tbody tr').count()) === 1, 5_000, 'the case gone from the list');
    assert.equal((await web.api('GET', `/list-test-cases?agent_id=${agentId}`)).json.length, 1);
    assert.deepEqual(browser.errors, []);
  });
});
