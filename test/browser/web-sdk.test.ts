/**
 * The browser SDK in real Chromium (fake microphone fed from a WAV of Flite speech) against the
 * protocol-faithful fake media server (WebSocket only: the pages ask for that transport): join, agent audio played, microphone audio sent, live
 * transcript, barge-in drops queued audio, mute sends silence, hangup, refused tokens, a refused
 * microphone, and a lost connection.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, WEB_DIST_DIR, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import type { WebCallStats } from '../../packages/web-sdk/src/index.ts';
import { type FakeMediaServer, startFakeMediaServer } from './fake-media-server.ts';

const skip = NO_CHROMIUM || NOT_BUILT;

interface PageEvent {
  name: string;
  payload: any;
}

describe('browser SDK against the fake media server', { skip, timeout: 120_000 }, () => {
  let server: FakeMediaServer;
  let browser: Browser;

  before(async () => {
    server = await startFakeMediaServer(WEB_DIST_DIR);
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'sdk-microphone.wav'), 'hello can you hear me', 300, 2000);
    browser = await launchBrowser({ microphoneWav: wav });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function openPage(): Promise<Page> {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/sdk-test.html`);
    await page.waitForFunction(() => (window as any).ready === true);
    return page;
  }

  const events = (page: Page) => page.evaluate(() => (window as any).events as PageEvent[]);
  const stats = (page: Page) => page.evaluate(() => (window as any).client.stats as WebCallStats);

  async function start(page: Page, token: string): Promise<string> {
    await page.evaluate((t) => ((window as any).nextToken = t), token);
    await page.click('#start');
    return page.evaluate(() => (window as any).startResult as Promise<string>);
  }

  test('a whole call: join, greeting played, microphone sent, transcript, barge-in, mute, hangup', async () => {
    const page = await openPage();
    const before = server.calls.length;
    assert.equal(await start(page, server.issueToken()), 'started');
    const call = server.calls[before]!;
    const names = (await events(page)).map((e) => e.name);
    assert.deepEqual(names.slice(0, 2), ['call_started', 'call_ready']);
    assert.equal((await events(page))[0]!.payload.call_id, call.callId);
    assert.equal(call.messages[0]!.type, 'join');
    assert.equal(call.messages[0]!.protocol_version, 1);
    assert.equal(call.messages[0]!.sample_rate, 16000);

    // The greeting (1 s of tone) is played through the jitter buffer.
    await eventually(async () => (await events(page)).some((e) => e.name === 'agent_stop_talking'), 5000, 'agent_stop_talking');
    const played = await eventually(async () => {
      const s = await stats(page);
      return s.playedSamples >= s.outputSampleRate * 0.9 ? s : null;
    }, 3000, 'the greeting to be played');
    assert.ok(played.receivedSamples >= 16_000 * 0.98, `received ${played.receivedSamples}`);
    assert.ok(await page.evaluate(() => (window as any).audioChunks > 0), 'audio events');

    // The fake microphone's speech reaches the server as 16 kHz PCM, in real time.
    await eventually(() => call.loudSamples > 1600, 8000, 'microphone speech at the server');
    const update = await eventually(
      async () => (await events(page)).find((e) => e.name === 'update' && e.payload.transcript.some((t: any) => t.role === 'user')),
      3000,
      'a user transcript update',
    );
    assert.deepEqual(update.payload.transcript.at(-1), { role: 'user', content: 'I heard you.' });
    const sentBefore = call.receivedSamples;
    await new Promise((r) => setTimeout(r, 1000));
    const perSecond = call.receivedSamples - sentBefore;
    assert.ok(perSecond > 14_000 && perSecond < 18_000, `~16000 samples/s sent (got ${perSecond})`);
    await screenshot(page, 'sdk-in-call');

    // Barge-in: the queued agent audio is dropped at once.
    await server.bargeIn(call, 400);
    await new Promise((r) => setTimeout(r, 150));
    const afterClear = await stats(page);
    await new Promise((r) => setTimeout(r, 500));
    const later = await stats(page);
    assert.ok(later.playedSamples - afterClear.playedSamples < later.outputSampleRate * 0.05, `played after clear: ${later.playedSamples - afterClear.playedSamples}`);
    assert.ok(later.droppedSamples > 0, 'queued samples were dropped');
    assert.equal(later.queuedSamples, 0);
    assert.ok((await events(page)).some((e) => e.name === 'agent_stop_talking' && e.payload.cut_off === true));

    // Mute: silence is still sent, continuously.
    await page.evaluate(() => (window as any).client.mute());
    await new Promise((r) => setTimeout(r, 200));
    const loudAtMute = call.loudSamples;
    const receivedAtMute = call.receivedSamples;
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(call.loudSamples, loudAtMute, 'only silence while muted');
    assert.ok(call.receivedSamples - receivedAtMute > 14_000, 'audio keeps flowing while muted');
    await page.evaluate(() => (window as any).client.unmute());

    // Keep-alive pings are answered.
    assert.ok(call.messages.some((m) => m.type === 'ping'));

    // Hang up.
    await page.click('#stop');
    assert.equal(await page.evaluate(() => (window as any).stopResult), 'stopped');
    const ended = (await events(page)).filter((e) => e.name === 'call_ended');
    assert.deepEqual(ended.map((e) => e.payload), [{ call_status: 'ended', disconnection_reason: 'user_hangup' }]);
    assert.ok(call.messages.some((m) => m.type === 'hangup'));
    assert.equal(await page.evaluate(() => (window as any).client.state), 'idle');
    assert.deepEqual(browser.errors, []);
    await page.close();
  });

  test('bad and used tokens are refused with the server’s codes', async () => {
    const page = await openPage();
    assert.equal(await start(page, 'not-a-token'), 'token_invalid');
    const token = server.issueToken();
    assert.equal(await start(page, token), 'started');
    await page.click('#stop');
    await page.evaluate(() => (window as any).stopResult);
    assert.equal(await start(page, token), 'token_used');
    const errors = (await events(page)).filter((e) => e.name === 'error').map((e) => e.payload.code);
    assert.deepEqual(errors, ['token_invalid', 'token_used']);
    assert.deepEqual(browser.errors, []);
    await page.close();
  });

  test("every failed start is emitted as error: no token, the page's backend failing, a second start", async () => {
    const page = await openPage();
    const before = server.calls.length;
    // The documented page's backend answered an error body: no access_token.
    assert.equal(await start(page, undefined as unknown as string), 'invalid_argument');
    // The page hands over its backend's promise, which rejects (the fetch failed).
    const failed = await page.evaluate(() =>
      (window as any).client.startCall({ accessToken: Promise.reject(new Error('the backend answered 500')), transport: 'websocket' }).then(() => 'started', (e: any) => e.code));
    assert.equal(failed, 'access_token_failed');
    assert.equal(server.calls.length, before, 'nothing was connected');
    assert.equal(await page.evaluate(() => (window as any).client.state), 'idle');
    // A promise that resolves to a token joins as a string does.
    const token = server.issueToken();
    const joined = await page.evaluate((t) =>
      (window as any).client.startCall({ accessToken: new Promise((resolve) => setTimeout(() => resolve(t), 50)), transport: 'websocket' }).then(() => 'started', (e: any) => e.code), token);
    assert.equal(joined, 'started');
    assert.equal(await start(page, server.issueToken()), 'call_in_progress');
    await page.click('#stop');
    await page.evaluate(() => (window as any).stopResult);
    const errors = (await events(page)).filter((e) => e.name === 'error').map((e) => e.payload);
    assert.deepEqual(errors.map((e) => e.code), ['invalid_argument', 'access_token_failed', 'call_in_progress']);
    assert.match(errors[1].message, /the backend answered 500/);
    assert.deepEqual(browser.errors, []);
    await page.close();
  });

  test('a lost connection is reported as connection_lost, then call_ended', async () => {
    const page = await openPage();
    const before = server.calls.length;
    assert.equal(await start(page, server.issueToken()), 'started');
    server.drop(server.calls[before]!);
    const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 5000, 'call_ended');
    assert.deepEqual(ended.payload, { call_status: null, disconnection_reason: 'connection_lost' });
    const error = (await events(page)).find((e) => e.name === 'error');
    assert.equal(error?.payload.code, 'connection_lost');
    assert.match(error?.payload.message, /ends the call/);
    assert.deepEqual(browser.errors, []);
    await page.close();
  });
});

describe('browser SDK with the microphone refused', { skip, timeout: 60_000 }, () => {
  test('startCall fails with microphone_denied and never connects', async () => {
    const server = await startFakeMediaServer(WEB_DIST_DIR);
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'sdk-microphone-denied.wav'), 'hello', 100, 500);
    const browser = await launchBrowser({ microphoneWav: wav, grantMicrophone: false });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.baseUrl}/sdk-test.html`);
      await page.waitForFunction(() => (window as any).ready === true);
      await page.evaluate((t) => ((window as any).nextToken = t), server.issueToken());
      await page.click('#start');
      assert.equal(await page.evaluate(() => (window as any).startResult), 'microphone_denied');
      const events = await page.evaluate(() => (window as any).events as PageEvent[]);
      assert.deepEqual(events.map((e) => e.name), ['error']);
      assert.match(events[0]!.payload.message, /Microphone access was refused/);
      assert.equal(server.calls.length, 0, 'no connection was made');
      assert.deepEqual(browser.errors, []);
    } finally {
      await browser.close();
      await server.close();
    }
  });
});
