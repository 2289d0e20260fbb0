/**
 * The dashboard in real Chromium against the real server (child process): sign in with an API
 * key (kept over a reload, forgotten on sign-out), search and filter calls, open a finished call,
 * play its recording and seek it from the transcript, its latency chart, function calls and node
 * path, at 1200 and 390 px; edit an agent as JSON and with the form (the API's 400 shown inline,
 * then new versions), the voice as a field (no voice list) or a picker (GET /list-voices), the diff
 * between versions; a flow's drawing; the overview (calls per day, reply latency p50 / p90); create a webhook (secret shown once) and see its deliveries,
 * redeliver one; leads and tickets lists. Screenshots of each page; no console errors.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Request } from 'playwright-core';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, assertFitsWidth, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { SEEDED_RECORDING_S, type WebServer, createDemoAgent, seedFinishedCall, startWebServer } from './server.ts';

describe('dashboard', { skip: NO_CHROMIUM || NOT_BUILT, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  let receiver: http.Server;
  let receiverUrl: string;
  const received: { event: string; id: string }[] = [];

  before(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        try {
          const json = JSON.parse(body);
          received.push({ event: json.event ?? json.type ?? '?', id: String(req.headers['webhook-id'] ?? '') });
        } catch {
          received.push({ event: '?', id: '' });
        }
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    web = await startWebServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_POLL_INTERVAL_MS: '50' });
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'dashboard-microphone.wav'), 'hello', 100, 500);
    browser = await launchBrowser({ microphoneWav: wav });
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  test('sign in, calls, call page with recording, agent JSON editing, webhooks and deliveries, leads and tickets', async () => {
    const { agentId } = await createDemoAgent(web);
    const callId = await seedFinishedCall(web, agentId);
    // A second, unfinished call, so the list has something to filter out.
    await web.api('POST', '/v2/create-web-call', { agent_id: agentId });

    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/dashboard`);
    /** A check for `eventually` that the calls list shows `n` rows; a failure says what it showed. */
    const showing = (n: number) => async () => {
      const count = await page.locator('#calls tbody tr').count();
      if (count === n) return true;
      const error = await page.locator('#calls-error').textContent({ timeout: 100 }).catch(() => null);
      throw new Error(`${count} rows shown${error ? `, error: ${error}` : ''}`);
    };

    // Sign in: a wrong key is refused, the right one admitted; it never appears in the URL.
    await page.fill('#api-key', `sb_${'x'.repeat(43)}`);
    await page.click('#sign-in-submit');
    await page.waitForSelector('#sign-in-error');
    assert.match(await page.textContent('#sign-in-error') ?? '', /not accepted/);
    await page.fill('#api-key', web.apiKey);
    await screenshot(page, 'dashboard-sign-in');
    await page.click('#sign-in-submit');
    await page.waitForSelector('#calls');
    assert.ok(!page.url().includes(web.apiKey));
    // The key is kept for the tab's life (sessionStorage only): a reload stays signed in.
    assert.deepEqual(await page.evaluate(() => ({ local: localStorage.length, cookie: document.cookie, session: Object.values(sessionStorage) })), { local: 0, cookie: '', session: [web.apiKey] });
    await page.reload();
    await page.waitForSelector('#calls');
    assert.equal(await page.locator('#sign-in').count(), 0, 'a reload does not sign out');

    // Calls: both listed; filtering by status keeps the finished one.
    await page.waitForSelector(`tr[data-call-id="${callId}"]`);
    assert.equal(await page.locator('#calls tbody tr').count(), 2);
    await page.selectOption('#filter-status', 'ended');
    await eventually(showing(1), 5000, 'the filtered list');
    // Answers arriving out of order: a slow answer to a superseded filter does not replace the
    // latest one's.
    const unfiltered = (request: Request) => request.url().endsWith('/v2/list-calls') && !('call_status' in (request.postDataJSON()?.filter_criteria ?? {}));
    await page.route('**/v2/list-calls', async (route) => {
      const response = await route.fetch();
      if (unfiltered(route.request())) await new Promise((resolve) => setTimeout(resolve, 1000));
      await route.fulfill({ response });
    });
    const slowAnswered = page.waitForEvent('requestfinished', unfiltered);
    await page.selectOption('#filter-status', '');
    await page.selectOption('#filter-status', 'ended');
    await slowAnswered;
    await page.waitForTimeout(200);
    await eventually(showing(1), 5000, 'the latest filter\'s list after a slow, superseded answer');
    await page.unroute('**/v2/list-calls');
    await page.selectOption('#filter-status', '');
    // Filter by outcome and reason (server-side), search by words said and by a metadata value.
    await page.selectOption('#filter-outcome', 'unsuccessful');
    await page.waitForSelector('#calls-empty');
    assert.match((await page.textContent('#calls-empty')) ?? '', /No calls match/);
    await page.selectOption('#filter-outcome', 'successful');
    await page.waitForSelector(`tr[data-call-id="${callId}"]`);
    assert.equal(await page.locator('#calls tbody tr').count(), 1);
    await page.selectOption('#filter-outcome', '');
    await page.selectOption('#filter-reason', 'agent_hangup');
    await eventually(showing(1), 5000, 'the reason filter');
    await page.selectOption('#filter-reason', '');
    await eventually(showing(2), 5000, 'both calls again');
    await page.fill('#search', 'BOOK an appointment');
    await page.click('#search-submit');
    await eventually(showing(1), 5000, 'the text search');
    assert.equal(await page.getAttribute('#calls tbody tr', 'data-call-id'), callId);
    await page.fill('#search', 'acme-42');
    await page.press('#search', 'Enter');
    await page.waitForSelector(`tr[data-call-id="${callId}"]`);
    await screenshot(page, 'dashboard-calls-search');
    await page.fill('#search', 'no such words');
    await page.click('#search-submit');
    await page.waitForSelector('#calls-empty');
    await page.click('#search-clear');
    await eventually(showing(2), 5000, 'the search cleared');
    await screenshot(page, 'dashboard-calls');

    // The call page: status, timeline, transcript with times, latency chart, analysis, metadata, custom attributes, recording.
    await page.click(`tr[data-call-id="${callId}"]`);
    await page.waitForSelector('#call-status');
    const text = (await page.textContent('main')) ?? '';
    for (const expected of ['agent_hangup', 'I would like to book an appointment', 'The caller booked an appointment.', 'ACME-42', 'gold', 'Joined', 'Ended', '0:03.0–0:05.1']) {
      assert.ok(text.includes(expected), `call page shows ${expected}`);
    }
    assert.equal(await page.locator('#latency tr[data-latency="e2e"]').count(), 1);
    assert.deepEqual(await page.locator('#latency-chart rect[data-series="e2e"]').evaluateAll((bars) => bars.map((b) => b.getAttribute('data-ms'))), ['640', '820']);
    assert.equal(await page.locator('#latency-chart rect[data-series="asr"]').count(), 2);
    assert.match((await page.textContent('#tool-calls')) ?? '', /No function calls/);
    await page.waitForSelector('audio#recording');
    const playback = await page.evaluate(async () => {
      const audio = document.querySelector('audio#recording') as HTMLAudioElement;
      audio.muted = true;
      await audio.play();
      // Position moves once playback runs (up to 5 s on a loaded machine).
      for (let waited = 0; audio.currentTime === 0 && waited < 5000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
      return { duration: audio.duration, time: audio.currentTime, error: audio.error?.message ?? null };
    });
    assert.equal(playback.error, null);
    assert.ok(Math.abs(playback.duration - SEEDED_RECORDING_S) < 0.05, `the recording lasts ${SEEDED_RECORDING_S} s (got ${playback.duration})`);
    assert.ok(playback.time > 0, 'the recording plays');
    // Clicking a line seeks the recording to its start (the user's line starts at 3 s).
    await page.click('#call-transcript li[data-start-ms="3000"]');
    const seeked = await page.evaluate(() => (document.querySelector('audio#recording') as HTMLAudioElement).currentTime);
    assert.ok(seeked >= 3 && seeked < 3.5, `seeked to 3 s (got ${seeked})`);
    await eventually(async () => (await page.locator('#call-transcript li.playing[data-start-ms="3000"]').count()) === 1, 3000, 'the line being played highlighted');
    // And from the keyboard: Enter on a focused line.
    await page.focus('#call-transcript li[data-start-ms="5800"]');
    await page.keyboard.press('Enter');
    const keyed = await page.evaluate(() => (document.querySelector('audio#recording') as HTMLAudioElement).currentTime);
    assert.ok(keyed >= 5.8 && keyed < 6.5, `seeked to 5.8 s from the keyboard (got ${keyed})`);
    await page.evaluate(() => (document.querySelector('audio#recording') as HTMLAudioElement).pause());
    await screenshot(page, 'dashboard-call');

    // Function calls and the node path, when the call object has transcript_with_tool_calls (Retell's shape).
    await page.route(`**/v2/get-call/${callId}`, async (route) => {
      const response = await route.fetch();
      const call = await response.json();
      call.transcript_with_tool_calls = [
        { role: 'node_transition', former_node_id: 'greet', new_node_id: 'book', new_node_name: 'Booking', time_sec: 3 },
        { role: 'tool_call_invocation', tool_call_id: 't1', name: 'book_slot', arguments: '{"day":"friday"}' },
        { role: 'tool_call_result', tool_call_id: 't1', content: '{"booked":true}', successful: true },
        { role: 'node_transition', former_node_id: 'book', new_node_id: 'bye', time_sec: 6 },
      ];
      await route.fulfill({ response, json: call });
    });
    await page.reload();
    await page.waitForSelector('#tool-calls li[data-tool="book_slot"]');
    assert.match((await page.textContent('#tool-calls')) ?? '', /friday[\s\S]*booked/);
    // Each node entered, by name where it has one, with when (seconds into the call).
    assert.deepEqual(await page.locator('#node-path li').allTextContents(), ['greet', 'Booking book 3.0 s', 'bye 6.0 s']);
    await screenshot(page, 'dashboard-call-tools');
    await page.unroute(`**/v2/get-call/${callId}`);

    // 390 px wide: nothing wider than the screen; the calls table keeps its essential columns.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.waitForSelector('#call-status');
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-call-390');
    await page.click('a[data-nav="calls"]');
    await page.waitForSelector(`tr[data-call-id="${callId}"]`);
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-calls-390');
    await page.setViewportSize({ width: 1200, height: 900 });

    // A call that does not exist: the API's error in place of the page.
    await page.goto(`${web.baseUrl}/dashboard#/calls/call_${'0'.repeat(32)}`);
    await page.waitForSelector('main .error');
    assert.match((await page.textContent('main .error')) ?? '', /call_not_found|not found/i);

    // Overview: today has both calls (one ended, one registered) and the seeded replies' p50 / p90 (640, 820 ms).
    await page.click('a[data-nav="overview"]');
    await page.waitForSelector('#calls-chart');
    assert.equal(await page.textContent('#overview-calls'), '2');
    assert.equal(await page.locator('#calls-chart g[data-calls="2"]').count(), 1);
    assert.equal(await page.locator('#calls-chart g[data-calls="2"] rect.bar.ended').count(), 1);
    assert.equal(await page.locator('#calls-chart g[data-calls="0"]').count(), 13, 'the other days of the 14 are empty');
    assert.equal(await page.getAttribute('#latency-over-time circle[data-series="p50"]', 'data-ms'), '730');
    assert.equal(await page.getAttribute('#latency-over-time circle[data-series="p90"]', 'data-ms'), '802');
    await page.selectOption('#overview-range', '30');
    await eventually(async () => (await page.locator('#calls-chart g[data-date]').count()) === 30, 5000, 'thirty days');
    await screenshot(page, 'dashboard-overview');
    await page.setViewportSize({ width: 390, height: 844 });
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-overview-390');
    await page.setViewportSize({ width: 1200, height: 900 });

    // Agents: a bad edit shows the API's validation message inline; a good one makes version 2.
    await page.click('a[data-nav="agents"]');
    await page.click(`tr[data-id="${agentId}"]`);
    await page.waitForSelector('#versions tr[data-version="1"]');
    await page.waitForSelector('#agent-form');
    assert.equal(await page.inputValue('#agent-name'), 'Reception');
    assert.match((await page.textContent('#version-diff')) ?? '', /One version only/);
    await page.click('#tab-json');
    const current = JSON.parse(await page.inputValue('#json-editor'));
    await page.fill('#json-editor', JSON.stringify({ ...current, interruption_sensitivity: 7 }, null, 2));
    await page.click('#save');
    await page.waitForSelector('#editor-error');
    assert.match((await page.textContent('#editor-error')) ?? '', /interruption_sensitivity/);
    await page.fill('#json-editor', '{ not json');
    await page.click('#save');
    await eventually(async () => /Not valid JSON/.test((await page.textContent('#editor-error')) ?? ''), 3000, 'the JSON error');
    await page.fill('#json-editor', JSON.stringify({ agent_name: 'Front desk' }, null, 2));
    await page.click('#save');
    await page.waitForSelector('#editor-saved');
    assert.match((await page.textContent('#editor-saved')) ?? '', /version 2/);
    await page.waitForSelector('#versions tr[data-version="2"]');
    await page.click('#versions tr[data-version="1"]');
    assert.match((await page.textContent('#versions')) ?? '', /"agent_name": "Reception"/);

    // The form: the voice is picked from the server's voices (GET /list-voices); a bad value shows the API's message.
    await page.click('#tab-form');
    await page.waitForSelector('select#agent-voice');
    const voiceIds = await page.locator('#agent-voice option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    assert.ok(voiceIds.includes('flite-kal16') && voiceIds.includes('flite-slt'), `the server's voices are offered: ${voiceIds.join(', ')}`);
    assert.equal(await page.inputValue('#agent-name'), 'Front desk', 'the form shows what the JSON saved');
    assert.equal(await page.inputValue('#agent-max-duration'), '60');
    await page.fill('#agent-silence', '5');
    await page.click('#save');
    await page.waitForSelector('#editor-error');
    assert.match((await page.textContent('#editor-error')) ?? '', /end_call_after_silence_ms/);
    await page.fill('#agent-silence', '30');
    await page.fill('#agent-interruption', '0.5');
    await page.fill('#agent-max-duration', '10');
    await page.selectOption('#agent-voice', 'flite-slt');
    await page.selectOption('#agent-storage', 'everything_except_pii');
    await page.click('#save');
    await eventually(async () => /version 3/.test((await page.textContent('#editor-saved')) ?? ''), 5000, 'version 3 saved from the form');
    const v3 = (await web.api('GET', `/get-agent/${agentId}`)).json;
    assert.deepEqual(
      { silence: v3.end_call_after_silence_ms, interruption: v3.interruption_sensitivity, max: v3.max_call_duration_ms, voice: v3.voice_id, storage: v3.data_storage_setting, name: v3.agent_name },
      { silence: 30_000, interruption: 0.5, max: 600_000, voice: 'flite-slt', storage: 'everything_except_pii', name: 'Front desk' },
    );
    // The diff between v2 and v3 lists exactly the changed settings (and the version fields).
    await page.waitForSelector('#versions tr[data-version="3"]');
    await page.waitForSelector('#version-diff table');
    const changed = await page.locator('#version-diff tr[data-path]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-path')));
    for (const field of ['data_storage_setting', 'end_call_after_silence_ms', 'interruption_sensitivity', 'voice_id', 'max_call_duration_ms']) assert.ok(changed.includes(field), `the diff lists ${field}`);
    assert.ok(!changed.includes('agent_name') && !changed.includes('language'), 'unchanged fields are not listed');
    await page.selectOption('#diff-from', '1');
    await page.waitForSelector('#version-diff tr[data-path="agent_name"]');
    assert.match((await page.textContent('#version-diff tr[data-path="agent_name"]')) ?? '', /"Reception"[\s\S]*"Front desk"/);
    await screenshot(page, 'dashboard-agent');

    // A server without a voice list (an older one: GET /list-voices answers 404): the voice is typed.
    await page.route('**/list-voices', (route) => route.fulfill({ status: 404, json: { status: 'error', code: 'not_found', message: 'Route GET:/list-voices not found' } }));
    await page.reload();
    await page.click('#tab-form');
    await page.waitForSelector('#agent-voice-hint');
    await page.fill('#agent-voice', 'flite-rms');
    await page.click('#save');
    await eventually(async () => /version 4/.test((await page.textContent('#editor-saved')) ?? ''), 5000, 'version 4 with the typed voice');
    assert.equal((await web.api('GET', `/get-agent/${agentId}`)).json.voice_id, 'flite-rms');
    await page.unroute('**/list-voices');
    await page.setViewportSize({ width: 390, height: 844 });
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-agent-390');
    await page.setViewportSize({ width: 1200, height: 900 });

    // Flows and service LLMs are listed and open as JSON.
    await page.click('a[data-nav="flows"]');
    await page.waitForSelector('#resources tbody tr');
    await page.click('#resources tbody tr');
    await page.waitForSelector('#flow-builder .bnode[data-node="greet"]'); // the builder first; the JSON one tab away
    await page.click('#tab-json');
    await page.waitForFunction(() => document.querySelector<HTMLTextAreaElement>('#json-editor')?.value.includes('start_node_id'));
    // The drawing: three nodes, the start marked, two labelled edges from greet.
    await page.waitForSelector('#flow-graph svg');
    assert.deepEqual((await page.locator('#flow-graph g.node').evaluateAll((g) => g.map((n) => n.getAttribute('data-node')))).sort(), ['book', 'bye', 'greet']);
    assert.equal(await page.locator('#flow-graph g.node.start[data-node="greet"]').count(), 1);
    assert.deepEqual((await page.locator('#flow-graph g.edge').evaluateAll((g) => g.map((e) => `${e.getAttribute('data-from')}>${e.getAttribute('data-to')}`))).sort(), ['greet>book', 'greet>bye']);
    assert.match((await page.textContent('#flow-graph')) ?? '', /appointment \/ book/);
    await screenshot(page, 'dashboard-flow');
    await page.click('a[data-nav="llms"]');
    await page.waitForSelector('main h1');

    // Webhooks: create one; the secret is shown once.
    await page.click('a[data-nav="webhooks"]');
    await page.fill('#webhook-url', receiverUrl);
    await page.click('#webhook-submit');
    await page.waitForSelector('#webhook-secret');
    const secret = (await page.textContent('#webhook-secret')) ?? '';
    assert.ok(secret.length >= 16, 'a secret is shown');
    await screenshot(page, 'dashboard-webhook-created');
    await page.click('a[data-nav="calls"]');
    await page.click('a[data-nav="webhooks"]');
    await page.waitForSelector('#webhook-list tr[data-webhook-id]');
    assert.equal(await page.locator('#webhook-secret').count(), 0, 'the secret is not shown again');
    assert.ok(!((await page.textContent('body')) ?? '').includes(secret));

    // An event (a lead) is delivered and appears in the log; redeliver sends it again.
    const lead = await web.api('POST', '/api/v1/leads/create.php', { name: 'Ada Lovelace', phone: '+15550100' });
    assert.equal(lead.status, 201);
    const ticket = await web.api('POST', '/api/v1/tickets/create.php', { subject: 'Call back', description: 'Wants a call back', lead_id: lead.json.id });
    assert.equal(ticket.status, 201);
    await eventually(() => received.some((r) => r.event === 'lead.created'), 15_000, 'the lead.created delivery');
    const row = await eventually(async () => {
      await page.click('#deliveries-refresh');
      await page.waitForTimeout(200);
      const delivered = page.locator('#delivery-table tr[data-event="lead.created"]');
      return (await delivered.count()) > 0 && /delivered/.test((await delivered.first().textContent()) ?? '') ? delivered.first() : null;
    }, 10_000, 'the delivered lead.created in the log');
    await row.click(); // shows the attempts and the payload
    await page.waitForSelector('text=HTTP 200');
    assert.match((await page.textContent('#delivery-table pre[data-field="payload"]')) ?? '', /"event": "lead.created"[\s\S]*Ada Lovelace/);
    const before = received.filter((r) => r.event === 'lead.created').length;
    await row.locator('button[data-action="redeliver"]').click();
    await page.waitForSelector('#redeliver-notice');
    await eventually(() => received.filter((r) => r.event === 'lead.created').length > before, 15_000, 'the redelivery');
    await screenshot(page, 'dashboard-webhooks');
    // A test event to this webhook: sent, received, and in the log.
    await page.click('#webhook-list button[data-action="test"]');
    await page.waitForSelector('#test-event-notice');
    await eventually(() => received.some((r) => r.event === 'webhook.test'), 15_000, 'the test event');
    await eventually(async () => {
      await page.click('#deliveries-refresh');
      await page.waitForTimeout(200);
      return /delivered/.test((await page.locator('#delivery-table tr[data-event="webhook.test"]').first().textContent({ timeout: 1000 }).catch(() => '')) ?? '');
    }, 10_000, 'the delivered test event in the log');

    // Leads and tickets.
    await page.click('a[data-nav="leads"]');
    await page.waitForSelector(`#leads tr[data-lead-id="${lead.json.id}"]`);
    assert.match((await page.textContent('#leads')) ?? '', /Ada Lovelace/);
    await screenshot(page, 'dashboard-leads');
    await page.click('a[data-nav="tickets"]');
    await page.waitForSelector(`#tickets tr[data-ticket-id="${ticket.json.id}"]`);
    assert.match((await page.textContent('#tickets')) ?? '', /Call back/);
    await screenshot(page, 'dashboard-tickets');

    // 390 px: the wide tables scroll inside their box, the page itself does not.
    await page.setViewportSize({ width: 390, height: 844 });
    await assertFitsWidth(page, 390);
    await page.click('a[data-nav="webhooks"]');
    await page.waitForSelector('#webhook-list tr[data-webhook-id]');
    await page.waitForSelector('#delivery-table');
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-webhooks-390');
    // Every other page at 390 px too (the call page, calls, overview and agent are checked above).
    for (const [nav, ready, name] of [
      ['leads', `#leads tr[data-lead-id="${lead.json.id}"]`, 'leads'],
      ['tickets', `#tickets tr[data-ticket-id="${ticket.json.id}"]`, 'tickets'],
      ['phone-numbers', 'main h1', 'phone-numbers'],
      ['llms', 'main h1', 'llms'],
      ['flows', '#resources tbody tr', 'flows'],
    ] as const) {
      await page.click(`a[data-nav="${nav}"]`);
      await page.waitForSelector(ready);
      await assertFitsWidth(page, 390);
      await screenshot(page, `dashboard-${name}-390`);
    }
    await page.click('#resources tbody tr');
    await page.waitForSelector('#flow-graph svg');
    await assertFitsWidth(page, 390);
    await screenshot(page, 'dashboard-flow-390');
    await page.setViewportSize({ width: 1200, height: 900 });

    // Delete the webhook (two-step).
    await page.click('a[data-nav="webhooks"]');
    await page.click('#webhook-list button[data-action="delete"]');
    await page.click('#webhook-list button[data-action="confirm-delete"]');
    await eventually(async () => (await page.locator('#webhook-list tr[data-webhook-id]').count()) === 0, 5000, 'the webhook to go');

    // Sign out forgets the key: a reload shows the sign-in form.
    await page.click('#sign-out');
    await page.waitForSelector('#sign-in');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.reload();
    await page.waitForSelector('#sign-in');

    // The only console errors are the refused requests the test made on purpose (401, 400).
    // The 404 of GET /list-voices the test plays (an older server) is expected too.
    const unexpected = browser.errors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401)/.test(e) && !/status of 404 .*\/list-voices/.test(e) && !/status of 422 .*\/v2\/get-call\/call_0{32}\]/.test(e));
    assert.deepEqual(unexpected, []);
    await page.close();
  });
});
