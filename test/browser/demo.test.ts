/**
 * The whole product in real Chromium, on the real server (child process) with the embedded
 * engines: the operator signs in to the dashboard and adds a webhook (secret shown once); a visitor
 * calls an agent from /demo with a fake microphone playing Flite speech ("I would like to book an
 * appointment"): the greeting plays (the page's audio output reports samples), the user's words
 * show in the live transcript, the flow moves on to its end node, the agent hangs up, and the
 * finished call appears with its recording. Back in the dashboard: the call is found, opened, its
 * recording plays, and the call.finished delivery is in the log. Screenshots of each page; no
 * console errors.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, SILENCE_BEFORE_REQUEST_MS, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import { type WebServer, createDemoAgent, startWebServer } from './server.ts';

const skip = NO_CHROMIUM || NOT_BUILT || (hasPocketsphinx() ? false : NO_POCKETSPHINX);

describe('demo page end to end, then the dashboard', { skip, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  let receiver: http.Server;
  let receiverUrl: string;
  const received: { event: string; body: any }[] = [];

  before(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const json = JSON.parse(body || '{}');
        received.push({ event: json.event ?? json.type ?? '?', body: json });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    web = await startWebServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_POLL_INTERVAL_MS: '50' });
    // Silence while the greeting plays, the request, then a long silence (Chromium loops the file).
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'demo-microphone.wav'), 'i would like to book an appointment', SILENCE_BEFORE_REQUEST_MS, 20_000);
    browser = await launchBrowser({ microphoneWav: wav });
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.waitForSelector('#calls');
  }

  test('call from /demo, see it finish, find it in the dashboard', async (t) => {
    const { agentId } = await createDemoAgent(web);

    // The operator adds a webhook in the dashboard.
    const dashboard = await browser.newPage();
    await signIn(dashboard);
    await dashboard.click('a[data-nav="webhooks"]');
    await dashboard.fill('#webhook-url', receiverUrl);
    await dashboard.click('#webhook-submit');
    await dashboard.waitForSelector('#webhook-secret');
    await screenshot(dashboard, 'e2e-dashboard-webhook-secret');

    // A visitor calls from the demo page.
    const demo = await browser.newPage();
    await demo.goto(`${web.baseUrl}/demo`);
    await demo.waitForSelector(`#agent option[value="${agentId}"]`, { state: 'attached' });
    await screenshot(demo, 'e2e-demo-idle');
    const clicked = Date.now();
    await demo.click('#start');
    await demo.waitForSelector('#status[data-phase="in_call"]', { timeout: 15_000 });
    const setupMs = Date.now() - clicked;
    t.diagnostic(`${setupMs} ms from the click to in_call`);
    // What the page shows, for a failure's message: a call that ended early says why and what was heard.
    const state = async () =>
      `${setupMs} ms from the click to in_call; status "${await demo.textContent('#status')}"; error "${(await demo.locator('#error').allTextContents()).join(' ')}"; ` +
      `transcript "${(await demo.locator('#live-transcript li, #final-transcript li').allTextContents()).join(' | ')}"`;
    const live = async (pattern: RegExp, role?: string): Promise<string | null> => {
      if ((await demo.locator('#status[data-phase="ended"]').count()) > 0) throw new Error(`the call ended: ${await state()}`);
      const lines = await demo.locator(`#live-transcript li${role ? `[data-role="${role}"]` : ''}`).allTextContents();
      return lines.find((l) => pattern.test(l)) ?? null;
    };

    // The greeting plays: the page's audio output reports samples.
    await eventually(async () => Number(await demo.getAttribute('#played', 'data-samples')) > 0, 10_000, 'agent audio to play');
    await eventually(() => live(/thanks for calling Acme/i), 10_000, 'the greeting in the live transcript');
    await screenshot(demo, 'e2e-demo-greeting');

    // The user's words show in the live transcript.
    const userLine = await eventually(() => live(/appointment/i, 'user'), 30_000, "the user's words in the live transcript");
    assert.match(userLine, /would like/i); // recognition is approximate; the flow keys on "appointment"
    await screenshot(demo, 'e2e-demo-in-call');

    // The flow moves on (end node), the agent hangs up, and the finished call appears.
    await demo.waitForSelector('#finished', { timeout: 30_000 });
    assert.equal(await demo.textContent('#ended-reason'), 'agent_hangup');
    await demo.waitForSelector('#finished[data-status="ended"]', { timeout: 20_000 });
    const finalTranscript = (await demo.textContent('#final-transcript')) ?? '';
    assert.match(finalTranscript, /appointment is booked/i);
    assert.match(finalTranscript, /appointment/i);
    await demo.waitForSelector('#latency tr[data-latency="e2e"]');
    const played = Number(await demo.getAttribute('#played', 'data-samples'));
    const rate = Number(await demo.getAttribute('#played', 'data-rate'));
    assert.ok(played / rate > 2, `more than 2 s of agent audio played (got ${(played / rate).toFixed(2)} s)`);
    await demo.waitForSelector('audio#recording');
    const recording = await demo.evaluate(async () => {
      const audio = document.querySelector('audio#recording') as HTMLAudioElement;
      audio.muted = true;
      await audio.play();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { duration: audio.duration, time: audio.currentTime, error: audio.error?.message ?? null };
    });
    assert.equal(recording.error, null);
    assert.ok(recording.duration > 3, `the recording covers the call (got ${recording.duration} s)`);
    assert.ok(recording.time > 0);
    await screenshot(demo, 'e2e-demo-finished');

    const callId = (await web.api('POST', '/v2/list-calls', {})).json.find((c: any) => c.metadata?.source === 'switchboard-demo')?.call_id as string;
    assert.ok(callId, 'the demo call is in the API');

    // The dashboard finds that call, opens it and plays its recording; its delivery is in the log.
    await dashboard.click('a[data-nav="calls"]');
    await dashboard.selectOption('#filter-status', 'ended');
    await dashboard.waitForSelector(`tr[data-call-id="${callId}"]`);
    await dashboard.click(`tr[data-call-id="${callId}"]`);
    await dashboard.waitForSelector('#call-status');
    assert.match((await dashboard.textContent('#call-transcript')) ?? '', /appointment/i);
    await dashboard.waitForSelector('audio#recording');
    const inDashboard = await dashboard.evaluate(async () => {
      const audio = document.querySelector('audio#recording') as HTMLAudioElement;
      audio.muted = true;
      await audio.play();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { duration: audio.duration, time: audio.currentTime, error: audio.error?.message ?? null };
    });
    assert.equal(inDashboard.error, null);
    assert.ok(Math.abs(inDashboard.duration - recording.duration) < 0.1);
    assert.ok(inDashboard.time > 0);
    await screenshot(dashboard, 'e2e-dashboard-call');

    await eventually(() => received.some((r) => r.event === 'call.finished'), 15_000, 'the call.finished delivery');
    await dashboard.click('a[data-nav="webhooks"]');
    assert.equal(await dashboard.locator('#webhook-secret').count(), 0, 'the secret is shown once only');
    await eventually(async () => {
      await dashboard.click('#deliveries-refresh');
      await dashboard.waitForTimeout(200);
      const row = dashboard.locator('#delivery-table tr[data-event="call.finished"]');
      return (await row.count()) > 0 && /delivered/.test((await row.first().textContent()) ?? '');
    }, 10_000, 'the call.finished delivery in the log');
    await screenshot(dashboard, 'e2e-dashboard-deliveries');

    assert.deepEqual(browser.errors, []);
  });
});
