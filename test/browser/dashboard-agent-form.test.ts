/**
 * The dashboard's agent form in real Chromium against the real server (child process): every
 * agent setting in its group with its help and default; settings of every kind changed and saved
 * as a new version (what the API then answers is checked); a Retell field without effect marked so
 * from the answer's `accepted_without_effect`; the API's 400 shown on the field it names.
 * Screenshots at 1280 and 390 px, nothing wider than 390 px.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { after, before, describe, test } from 'node:test';
import { ALL_SETTINGS, SETTING_GROUPS, settingId } from '../../web/dashboard/agent-settings.ts';
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

describe('dashboard agent form', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 120_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];
  before(async () => {
    web = await startWebServer({ ACCESS_TOKEN_TTL_MS: '1500', TOKEN_SWEEP_INTERVAL_MS: '200' }); // unjoined calls expire at once
    browser = await launchBrowser({ microphoneWav: await speechWav(path.join(ARTIFACTS_DIR, 'agent-form-microphone.wav'), 'hello', 100, 100) });
    page = await browser.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('every setting, grouped, saved as a new version; no effect marked; a 400 on its field', async () => {
    const { agentId } = await createDemoAgent(web, 'Front desk');
    await page.goto(`${web.baseUrl}/dashboard#/agents/${agentId}`);
    await page.waitForSelector('#agent-form select#agent-voice');

    // Every setting is there, in its group, with its default in its help.
    for (const group of SETTING_GROUPS) {
      assert.equal(await page.locator(`#agent-group-${group.id} legend`).textContent(), group.title);
      for (const setting of group.settings) {
        assert.equal(await page.locator(`#agent-group-${group.id} #${settingId(setting)}`).count(), 1, `${setting.key} is in ${group.title}`);
      }
    }
    assert.match((await page.textContent('[data-hint="end_of_turn_max_silence_ms"]')) ?? '', /200 to 5000 ms\. Default: 1200 ms\./);
    assert.equal(await page.locator('#agent-group-call .badge.no-effect').count(), ALL_SETTINGS.filter((s) => s.noEffect && SETTING_GROUPS.find((g) => g.id === 'call')!.settings.includes(s)).length);
    assert.equal(await page.locator('#agent-without-effect').count(), 0, 'nothing set without effect yet');
    await bothWidths(page, 'dashboard-agent-form');

    // A value out of range: the API's 400 is shown on that field (and under the editor).
    await page.fill('#agent-end-of-turn-min-silence-ms', '50');
    await page.click('#save');
    await page.waitForSelector('#agent-end-of-turn-min-silence-ms-error');
    assert.match((await page.textContent('#agent-end-of-turn-min-silence-ms-error')) ?? '', /end_of_turn_min_silence_ms must be >= 100/);
    assert.match((await page.getAttribute('#agent-end-of-turn-min-silence-ms', 'class')) ?? '', /invalid/);
    assert.equal((await web.api('GET', `/get-agent/${agentId}`)).json.version, 1, 'nothing saved');

    // Settings of every kind, then Save: a new version with exactly these values.
    await page.fill('#agent-end-of-turn-min-silence-ms', '400');
    await page.fill('#agent-responsiveness', '0.6');
    await page.fill('#agent-reminder-trigger-ms', '20');
    await page.fill('#agent-voice-speed', '1.25');
    await page.uncheck('#agent-preemptive-replies');
    await page.fill('#agent-boosted-keywords', 'Quay Street\nHarbor Bikes\n');
    await page.selectOption('#agent-denoising-mode', 'noise-cancellation');
    await page.check('#agent-webhook-events input[data-value="call_ended"]');
    await page.fill('#agent-user-dtmf-options-digit-limit', '4');
    await page.click('#agent-post-call-analysis-data [data-action="add-row"]');
    await page.fill('#agent-post-call-analysis-data [data-row="0"] input[data-column="name"]', 'intent');
    await page.selectOption('#agent-post-call-analysis-data [data-row="0"] select[data-column="type"]', 'enum');
    await page.fill('#agent-post-call-analysis-data [data-row="0"] input[data-column="description"]', 'Why the caller called');
    await page.fill('#agent-post-call-analysis-data [data-row="0"] input[data-column="choices"]', 'booking, question');
    await page.click('#agent-pronunciation-dictionary [data-action="add-row"]');
    await page.fill('#agent-pronunciation-dictionary [data-row="0"] input[data-column="word"]', 'Quay');
    await page.selectOption('#agent-pronunciation-dictionary [data-row="0"] select[data-column="alphabet"]', 'cmu');
    await page.fill('#agent-pronunciation-dictionary [data-row="0"] input[data-column="phoneme"]', 'K IY1');
    await page.check('#agent-enable-backchannel');
    await page.click('#save');
    await page.waitForSelector('#editor-saved, #editor-error');
    assert.equal(await page.locator('#editor-error').count(), 0, (await page.locator('#editor-error').textContent({ timeout: 100 }).catch(() => '')) ?? '');
    assert.match((await page.textContent('#editor-saved')) ?? '', /version 2/);
    const saved = (await web.api('GET', `/get-agent/${agentId}`)).json;
    assert.deepEqual(
      {
        min: saved.end_of_turn_min_silence_ms, responsiveness: saved.responsiveness, reminder: saved.reminder_trigger_ms, speed: saved.voice_speed, preemptive: saved.preemptive_replies,
        keywords: saved.boosted_keywords, denoise: saved.denoising_mode, events: saved.webhook_events, dtmf: saved.user_dtmf_options,
        analysis: saved.post_call_analysis_data, pronunciations: saved.pronunciation_dictionary, backchannel: saved.enable_backchannel,
        unchanged: [saved.agent_name, saved.end_of_turn_max_silence_ms, saved.max_call_duration_ms],
      },
      {
        min: 400, responsiveness: 0.6, reminder: 20_000, speed: 1.25, preemptive: false,
        keywords: ['Quay Street', 'Harbor Bikes'], denoise: 'noise-cancellation', events: ['call_ended'], dtmf: { digit_limit: 4 },
        analysis: [{ name: 'intent', type: 'enum', description: 'Why the caller called', choices: ['booking', 'question'] }],
        pronunciations: [{ word: 'Quay', alphabet: 'cmu', phoneme: 'K IY1' }], backchannel: true,
        unchanged: ['Front desk', 1200, 3_600_000],
      },
    );
    // The answer's accepted_without_effect is shown.
    await page.waitForSelector('#agent-without-effect');
    assert.match((await page.textContent('#agent-without-effect')) ?? '', /enable_backchannel/);
    await page.waitForSelector('#versions tr[data-version="2"]');

    // The JSON tab holds what the form shows, and back.
    await page.click('#tab-json');
    const json = JSON.parse(await page.inputValue('#json-editor'));
    assert.deepEqual(json.boosted_keywords, ['Quay Street', 'Harbor Bikes']);
    await page.click('#tab-form');
    assert.equal(await page.inputValue('#agent-boosted-keywords'), 'Quay Street\nHarbor Bikes');
    await bothWidths(page, 'dashboard-agent-form-saved');
    assert.deepEqual(consoleErrors.filter((e) => !/status of 400/.test(e)), []);
  });

  test('voice preview: a sentence spoken with the form\'s voice and speed plays in an audio element', async () => {
    const { agentId } = await createDemoAgent(web, 'Preview');
    await page.goto(`${web.baseUrl}/dashboard#/agents/${agentId}`);
    await page.waitForSelector('#agent-form select#agent-voice');
    await page.selectOption('#agent-voice', 'flite-slt');
    await page.fill('#voice-preview-text', 'Thank you for calling Harbor Bikes.');
    const asked = page.waitForRequest('**/v2/voice-preview');
    await page.click('#voice-preview-play');
    assert.deepEqual((await asked).postDataJSON(), { text: 'Thank you for calling Harbor Bikes.', voice_id: 'flite-slt', voice_speed: 1, volume: 1, normalize_for_speech: false });
    await page.waitForSelector('#voice-preview-audio');
    // It plays: the element has the sample's length and its clock moves.
    const normal = await eventually(() => page.$eval('#voice-preview-audio', (a) => ((a as HTMLAudioElement).duration > 0 ? (a as HTMLAudioElement).duration : null)), 10_000, 'the sample loaded');
    assert.ok(normal > 1 && normal < 6, `about 2 s of speech, got ${normal} s`);
    await eventually(() => page.$eval('#voice-preview-audio', (a) => (a as HTMLAudioElement).currentTime > 0.2), 10_000, 'the sample playing');
    // At speed 2 the sample is shorter: the preview follows the unsaved form.
    await page.fill('#agent-voice-speed', '2');
    await page.click('#voice-preview-play');
    await eventually(() => page.$eval('#voice-preview-audio', (a, before) => ((a as HTMLAudioElement).duration > 0 && (a as HTMLAudioElement).duration < before * 0.75 ? true : null), normal), 10_000, 'a shorter sample at speed 2');
    await bothWidths(page, 'dashboard-agent-voice-preview');
  });

  test('a call nobody joined is one line saying so and what to do, registered and then expired', async () => {
    const { agentId } = await createDemoAgent(web, 'Unjoined');
    const created = await web.api('POST', '/v2/create-web-call', { agent_id: agentId });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const callId: string = created.json.call_id;
    await page.goto(`${web.baseUrl}/dashboard#/calls/${callId}`);
    await page.waitForSelector('#call-unjoined');
    assert.match((await page.textContent('#call-unjoined')) ?? '', /registered.*not joined yet.*access token/s);
    assert.equal(await page.locator('main .card').count(), 0, 'no empty cards');
    await bothWidths(page, 'dashboard-call-registered');
    await eventually(async () => (await web.api('GET', `/v2/get-call/${callId}`)).json.disconnection_reason === 'error_user_not_joined', 10_000, 'the token expired');
    await page.reload();
    await page.waitForSelector('#call-unjoined');
    assert.match((await page.textContent('#call-unjoined')) ?? '', /error.*Never joined.*Create a call and join it at once/s);
    assert.equal(await page.locator('main .card').count(), 0, 'no empty cards');
    await bothWidths(page, 'dashboard-call-unjoined');
  });
});
