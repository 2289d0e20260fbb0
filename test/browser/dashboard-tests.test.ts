/**
 * An agent's Tests tab in real Chromium against the real server (child process): a test case
 * built with the form (a script turn, a function mock, assertions of three kinds) whose JSON tab
 * holds exactly what the form made and round-trips unchanged; a second case written in the JSON
 * tab with a deliberately failing assertion; Run all, then one case passed and the other failed
 * with its first failing assertion highlighted (expected and actual), the transcript shown; the
 * run in the history under its agent version; a case deleted. Screenshots at 1280 and 390 px,
 * nothing wider than 390 px; no console errors.
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

describe('dashboard agent tests', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 120_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser({ microphoneWav: await speechWav(path.join(ARTIFACTS_DIR, 'agent-tests-microphone.wav'), 'hello', 100, 100) });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('a case through the form, one through its JSON, run all, a pass and a highlighted failure, the history', async () => {
    // The flow: greet; "appointment" or "book" -> book ("Your appointment is booked. Goodbye."), else -> bye.
    const { agentId } = await createDemoAgent(web, 'Front desk');
    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
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
