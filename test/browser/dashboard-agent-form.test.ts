/**
 * The dashboard's agent form in real Chromium against the real server (child process): every
 * agent setting in its group with its help and default; settings of every kind changed and saved
 * as a new version (what the API then answers is checked); a Retell field without effect marked so
 * from the answer's `accepted_without_effect`; the API's 400 shown on the field it names.
 * The voice preview heard in the page; a service LLM made with its form; a call nobody joined.
 * Screenshots at 1280 and 390 px, nothing wider than 390 px.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Page, Route } from 'playwright-core';
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
    await page.selectOption('#agent-stt-mode', 'accurate');
    await page.click('#save');
    await page.waitForSelector('#editor-saved, #editor-error');
    assert.equal(await page.locator('#editor-error').count(), 0, (await page.locator('#editor-error').textContent({ timeout: 100 }).catch(() => '')) ?? '');
    assert.match((await page.textContent('#editor-saved')) ?? '', /version 2/);
    const saved = (await web.api('GET', `/get-agent/${agentId}`)).json;
    assert.deepEqual(
      {
        min: saved.end_of_turn_min_silence_ms, responsiveness: saved.responsiveness, reminder: saved.reminder_trigger_ms, speed: saved.voice_speed, preemptive: saved.preemptive_replies,
        keywords: saved.boosted_keywords, denoise: saved.denoising_mode, events: saved.webhook_events, dtmf: saved.user_dtmf_options,
        analysis: saved.post_call_analysis_data, pronunciations: saved.pronunciation_dictionary, backchannel: saved.enable_backchannel, sttMode: saved.stt_mode,
        unchanged: [saved.agent_name, saved.end_of_turn_max_silence_ms, saved.max_call_duration_ms],
      },
      {
        min: 400, responsiveness: 0.6, reminder: 20_000, speed: 1.25, preemptive: false,
        keywords: ['Quay Street', 'Harbor Bikes'], denoise: 'noise-cancellation', events: ['call_ended'], dtmf: { digit_limit: 4 },
        analysis: [{ name: 'intent', type: 'enum', description: 'Why the caller called', choices: ['booking', 'question'] }],
        pronunciations: [{ word: 'Quay', alphabet: 'cmu', phoneme: 'K IY1' }], backchannel: true, sttMode: 'accurate',
        unchanged: ['Front desk', 1200, 3_600_000],
      },
    );
    // The answer's accepted_without_effect is shown.
    await page.waitForSelector('#agent-without-effect');
    // (stt_mode is one; enable_backchannel changes the call, so it is not.)
    const withoutEffect = (await page.textContent('#agent-without-effect')) ?? '';
    assert.match(withoutEffect, /stt_mode/);
    assert.doesNotMatch(withoutEffect, /enable_backchannel/);
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
    // The agent arrives after the voice list: a voice picked must not be overwritten when it does.
    const slowAgent = async (route: Route) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      await route.continue();
    };
    await page.route('**/get-agent/**', slowAgent);
    await page.goto(`${web.baseUrl}/dashboard#/agents/${agentId}`);
    await page.waitForSelector('#agent-form select#agent-voice');
    await page.selectOption('#agent-voice', 'flite-slt');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await page.unroute('**/get-agent/**', slowAgent);
    assert.equal(await page.inputValue('#agent-voice'), 'flite-slt', 'the voice picked is kept');
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

  test('a service LLM made with its form: model, prompt, tools, states; the JSON one tab away is exactly what was saved', async () => {
    await page.goto(`${web.baseUrl}/dashboard#/llms/new`);
    await page.waitForSelector('#llm-form');
    assert.equal(await page.inputValue('#llm-prompt'), 'You are a helpful assistant.', 'the template');
    await page.fill('#llm-model', 'gpt-4o-mini');
    await page.fill('#llm-temperature', '0.3');
    await page.fill('#llm-prompt', 'You take bookings for Harbor Bikes.');
    await page.fill('#llm-begin-message', 'Harbor Bikes, how can I help?');
    // Tools of every state: a custom function and end_call.
    await page.click('#llm-general-tools [data-action="add-tool"]');
    await page.fill('#llm-general-tools [data-tool="0"] [data-field="name"]', 'check_order');
    await page.fill('#llm-general-tools [data-tool="0"] [data-field="url"]', 'https://orders.example.com/status');
    await page.fill('#llm-general-tools-0-parameters', '{"type":"object","properties":{"order":{"type":"string"}}}');
    await page.selectOption('#llm-general-tools > .row [data-action="tool-type"]', 'end_call');
    await page.click('#llm-general-tools > .row [data-action="add-tool"]');
    // Two states, an edge from the first to the second, a transfer_call in the second.
    await page.click('#llm-add-state');
    await page.click('#llm-add-state');
    await page.fill('#llm-states [data-state="0"] [data-field="name"]', 'greeting');
    await page.fill('#llm-states [data-state="0"] [data-field="state_prompt"]', 'Find out what the caller wants.');
    await page.fill('#llm-states [data-state="1"] [data-field="name"]', 'booking');
    await page.click('#llm-states [data-state="0"] [data-action="add-edge"]');
    await page.fill('#llm-states [data-state="0"] [data-edge="0"] [data-field="edge_description"]', 'The caller wants to book.');
    await page.selectOption('#llm-state-1-tools [data-action="tool-type"]', 'transfer_call');
    await page.click('#llm-state-1-tools [data-action="add-tool"]');
    await page.fill('#llm-state-1-tools [data-tool="0"] [data-field="number"]', '+15550123');
    await page.fill('#llm-top-k', '4');
    await bothWidths(page, 'dashboard-llm-form');
    await page.click('#save');
    await page.waitForURL(/#\/llms\/llm_/);
    const llmId = /#\/llms\/([^/]+)$/.exec(page.url())![1]!;
    const saved = (await web.api('GET', `/get-service-llm/${llmId}`)).json;
    assert.deepEqual(
      { model: saved.model, t: saved.model_temperature, prompt: saved.general_prompt, begin: saved.begin_message, tools: saved.general_tools, states: saved.states, kb: saved.kb_config },
      {
        model: 'gpt-4o-mini', t: 0.3, prompt: 'You take bookings for Harbor Bikes.', begin: 'Harbor Bikes, how can I help?',
        tools: [
          { type: 'custom', name: 'check_order', url: 'https://orders.example.com/status', parameters: { type: 'object', properties: { order: { type: 'string' } } } },
          { type: 'end_call', name: 'end_call' },
        ],
        states: [
          { name: 'greeting', state_prompt: 'Find out what the caller wants.', edges: [{ destination_state_name: 'booking', description: 'The caller wants to book.' }] },
          { name: 'booking', tools: [{ type: 'transfer_call', name: 'transfer_call', transfer_destination: { type: 'predefined', number: '+15550123' } }] },
        ],
        kb: { top_k: 4 },
      },
    );
    // The JSON tab holds what was saved (less the fields the server sets), and back to the form unchanged.
    await page.waitForSelector('#llm-form');
    await page.click('#tab-json');
    const json = JSON.parse(await page.inputValue('#json-editor'));
    const { llm_id: _id, created_at: _c, last_modification_timestamp: _m, accepted_without_effect: _a, ...editable } = saved;
    assert.deepEqual(json, editable);
    await page.click('#tab-form');
    assert.equal(await page.inputValue('#llm-states [data-state="1"] [data-field="name"]'), 'booking');
    // A refusal is shown on its field: a state edge to a state that does not exist.
    await page.fill('#llm-states [data-state="0"] [data-edge="0"] [data-field="destination_state_name"]', 'nowhere');
    await page.click('#save');
    await page.waitForSelector('#llm-states-error');
    assert.match((await page.textContent('#llm-states-error')) ?? '', /nowhere/);
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
