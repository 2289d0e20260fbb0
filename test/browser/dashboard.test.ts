/**
 * The dashboard in real Chromium against the real server (child process): sign in with an API
 * key, find a finished call, open it, play its recording; edit an agent as JSON (the API's 400
 * shown inline, then a new version); create a webhook (secret shown once) and see its deliveries,
 * redeliver one; leads and tickets lists. Screenshots of each page; no console errors.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { type WebServer, createDemoAgent, seedFinishedCall, startWebServer } from './server.ts';

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
    assert.equal(await page.evaluate(() => localStorage.length + sessionStorage.length + document.cookie.length), 0);

    // Calls: both listed; filtering by status keeps the finished one.
    await page.waitForSelector(`tr[data-call-id="${callId}"]`);
    assert.equal(await page.locator('#calls tbody tr').count(), 2);
    await page.selectOption('#filter-status', 'ended');
    await eventually(async () => (await page.locator('#calls tbody tr').count()) === 1, 5000, 'the filtered list');
    await screenshot(page, 'dashboard-calls');

    // The call page: status, timeline, transcript, latency, analysis, metadata, custom attributes, recording.
    await page.click(`tr[data-call-id="${callId}"]`);
    await page.waitForSelector('#call-status');
    const text = (await page.textContent('main')) ?? '';
    for (const expected of ['agent_hangup', 'I would like to book an appointment', 'The caller booked an appointment.', 'ACME-42', 'gold', 'Joined', 'Ended']) {
      assert.ok(text.includes(expected), `call page shows ${expected}`);
    }
    assert.equal(await page.locator('#latency tr[data-latency="e2e"]').count(), 1);
    await page.waitForSelector('audio#recording');
    const playback = await page.evaluate(async () => {
      const audio = document.querySelector('audio#recording') as HTMLAudioElement;
      audio.muted = true;
      await audio.play();
      await new Promise((resolve) => setTimeout(resolve, 400));
      return { duration: audio.duration, time: audio.currentTime, error: audio.error?.message ?? null };
    });
    assert.equal(playback.error, null);
    assert.ok(Math.abs(playback.duration - 1) < 0.05, `recording lasts 1 s (got ${playback.duration})`);
    assert.ok(playback.time > 0, 'the recording plays');
    await screenshot(page, 'dashboard-call');

    // Agents: a bad edit shows the API's validation message inline; a good one makes version 2.
    await page.click('a[data-nav="agents"]');
    await page.click(`tr[data-id="${agentId}"]`);
    await page.waitForSelector('#versions tr[data-version="1"]');
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
    await screenshot(page, 'dashboard-agent');

    // Flows and service LLMs are listed and open as JSON.
    await page.click('a[data-nav="flows"]');
    await page.waitForSelector('#resources tbody tr');
    await page.click('#resources tbody tr');
    await page.waitForFunction(() => document.querySelector<HTMLTextAreaElement>('#json-editor')?.value.includes('start_node_id'));
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
    await row.click(); // shows the attempts
    await page.waitForSelector('text=HTTP 200');
    const before = received.filter((r) => r.event === 'lead.created').length;
    await row.locator('button[data-action="redeliver"]').click();
    await page.waitForSelector('#redeliver-notice');
    await eventually(() => received.filter((r) => r.event === 'lead.created').length > before, 15_000, 'the redelivery');
    await screenshot(page, 'dashboard-webhooks');

    // Leads and tickets.
    await page.click('a[data-nav="leads"]');
    await page.waitForSelector(`#leads tr[data-lead-id="${lead.json.id}"]`);
    assert.match((await page.textContent('#leads')) ?? '', /Ada Lovelace/);
    await screenshot(page, 'dashboard-leads');
    await page.click('a[data-nav="tickets"]');
    await page.waitForSelector(`#tickets tr[data-ticket-id="${ticket.json.id}"]`);
    assert.match((await page.textContent('#tickets')) ?? '', /Call back/);
    await screenshot(page, 'dashboard-tickets');

    // Delete the webhook (two-step).
    await page.click('a[data-nav="webhooks"]');
    await page.click('#webhook-list button[data-action="delete"]');
    await page.click('#webhook-list button[data-action="confirm-delete"]');
    await eventually(async () => (await page.locator('#webhook-list tr[data-webhook-id]').count()) === 0, 5000, 'the webhook to go');

    // The only console errors are the refused requests the test made on purpose (401, 400).
    const unexpected = browser.errors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401)/.test(e));
    assert.deepEqual(unexpected, []);
    await page.close();
  });
});
