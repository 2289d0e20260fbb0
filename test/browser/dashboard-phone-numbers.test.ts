/**
 * The dashboard's Phone numbers page in real Chromium against the real server (child process):
 * none yet; importing a Twilio number with a bad number shows the API's 400 naming the field;
 * a good one is listed (the credentials are cleared from the form and never returned); the
 * Twilio webhook URL to configure is shown; the outbound agent is bound from the row; delete asks,
 * then removes it. No console errors.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { type WebServer, createDemoAgent, startWebServer } from './server.ts';

const SID = `AC${'a1'.repeat(16)}`;
const TOKEN = 'b2'.repeat(16);

describe('dashboard phone numbers', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 120_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser({ microphoneWav: await speechWav(path.join(ARTIFACTS_DIR, 'phone-numbers-microphone.wav'), 'hello', 100, 100) });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('import a Twilio number, bind its agents, delete it', async () => {
    const { agentId } = await createDemoAgent(web, 'Front desk');
    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.click('a[data-nav="phone-numbers"]');
    await page.waitForSelector('#phone-numbers-empty');
    assert.equal(await page.textContent('#twilio-webhook-url'), `${web.baseUrl}/twilio/voice`);

    // A number that is not E.164: the API's 400, naming the field, shown inline; nothing created.
    await page.fill('#number-phone-number', '4155550100');
    await page.fill('#number-twilio-account-sid', SID);
    await page.fill('#number-twilio-auth-token', TOKEN);
    await page.selectOption('#number-inbound-agent-id', agentId);
    await page.click('#import-number-submit');
    await page.waitForSelector('#import-number-error');
    assert.match((await page.textContent('#import-number-error')) ?? '', /phone_number/);
    assert.equal((await web.api('GET', '/list-phone-numbers')).json.length, 0);

    await page.fill('#number-phone-number', '+14155550100');
    await page.fill('#number-nickname', 'Main line');
    await page.click('#import-number-submit');
    await page.waitForSelector('tr[data-number="+14155550100"]');
    assert.match((await page.textContent('tr[data-number="+14155550100"]')) ?? '', /\+1 \(415\) 555-0100.*Main line.*twilio/);
    assert.equal(await page.inputValue('#number-twilio-auth-token'), '', 'the token leaves the form once sent');
    assert.equal(await page.inputValue('#inbound-14155550100'), agentId);
    const stored = (await web.api('GET', '/get-phone-number/%2B14155550100')).json;
    assert.equal(stored.inbound_agent_id, agentId);
    assert.equal(stored.twilio_credentials_set, true);
    assert.ok(!JSON.stringify(stored).includes(TOKEN), 'the token is never returned');
    await screenshot(page, 'dashboard-phone-numbers');

    // Bind the outbound agent from the row.
    await page.selectOption('#outbound-14155550100', agentId);
    await eventually(async () => (await web.api('GET', '/get-phone-number/14155550100')).json.outbound_agent_id === agentId, 5_000, 'the outbound agent bound');

    await page.click('tr[data-number="+14155550100"] button[data-action="delete"]');
    await page.click('tr[data-number="+14155550100"] button[data-action="confirm-delete"]');
    await page.waitForSelector('#phone-numbers-empty');
    assert.equal((await web.api('GET', '/list-phone-numbers')).json.length, 0);
    assert.deepEqual(browser.errors.filter((e) => !/status of 400/.test(e)), []);
  });
});
