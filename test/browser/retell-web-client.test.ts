/**
 * RetellWebClient (issue 26, item 9) in real Chromium against the real server: a page written for
 * Retell's browser client, with only its import and base URL changed, runs a custom-LLM call:
 * Retell's events with Retell's payloads (`update` and `metadata` carry `event_type`), raw audio
 * samples, mute and unmute, stopCall, and a refused token reported as Retell reports errors.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, eventually, launchBrowser, speechWav } from './browser.ts';
import { type WebServer, startWebServer } from './server.ts';
import { LlmServer, send } from '../media/llm-server.ts';

const skip = NO_CHROMIUM || NOT_BUILT;

interface PageEvent {
  name: string;
  payload: any;
}

describe('RetellWebClient in Chromium', { skip, timeout: 120_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  let llm: LlmServer;
  let agentId: string;

  before(async () => {
    llm = new LlmServer();
    await llm.listening;
    llm.behave = (ws) => {
      send(ws, { response_type: 'metadata', metadata: { screen: 'orders', ids: [1, 2] } });
      send(ws, { response_type: 'response', response_id: 0, content: 'Hello from the Retell page.', content_complete: true });
    };
    web = await startWebServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'retell-microphone.wav'), 'hello', 8000, 12_000);
    browser = await launchBrowser({ microphoneWav: wav });
    const agent = await web.api('POST', '/create-agent', { response_engine: { type: 'custom-llm', llm_websocket_url: llm.url }, reminder_max_count: 0 });
    assert.equal(agent.status, 201, JSON.stringify(agent.json));
    agentId = agent.json.agent_id as string;
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await llm?.close();
  });

  /** A page on the server's origin, as a Retell page would be written, its import and base URL changed. */
  async function retellPage(token: string): Promise<{ page: Page; result: string }> {
    const page = await browser.newPage();
    await page.goto(`${web.baseUrl}/demo`);
    const result = await page.evaluate(async (accessToken) => {
      const { RetellWebClient } = await import(`${location.origin}/sdk/web-sdk.js`);
      const w = window as any;
      w.events = [];
      w.audioChunks = 0;
      const retellWebClient = new RetellWebClient({ baseUrl: location.origin });
      w.client = retellWebClient;
      for (const name of ['call_started', 'call_ready', 'call_ended', 'agent_start_talking', 'agent_stop_talking', 'update', 'metadata', 'error']) {
        retellWebClient.on(name, (payload: unknown) => w.events.push({ name, payload: payload ?? null }));
      }
      retellWebClient.on('audio', (samples: Float32Array) => {
        if (samples instanceof Float32Array) w.audioChunks += 1;
      });
      try {
        await retellWebClient.startCall({ accessToken, sampleRate: 24000, emitRawAudioSamples: true, transport: 'websocket' });
        return 'started';
      } catch {
        return 'failed';
      }
    }, token);
    return { page, result };
  }
  const events = (page: Page) => page.evaluate(() => (window as any).events as PageEvent[]);

  test("a Retell page runs a call: Retell's events and payloads, audio, mute, stopCall", async () => {
    const created = await web.api('POST', '/v2/create-web-call', { agent_id: agentId });
    assert.equal(created.status, 201);
    const { page, result } = await retellPage(created.json.access_token as string);
    assert.equal(result, 'started');
    await eventually(async () => (await events(page)).find((e) => e.name === 'agent_stop_talking'), 20_000, 'the greeting spoken');
    const all = await events(page);
    const names = all.map((e) => e.name);
    assert.deepEqual(names.slice(0, 2), ['call_started', 'call_ready']);
    // Retell's client passes no payload with these.
    for (const e of all.filter((x) => ['call_started', 'call_ready', 'agent_start_talking', 'agent_stop_talking'].includes(x.name))) assert.equal(e.payload, null, e.name);
    const metadata = all.find((e) => e.name === 'metadata');
    assert.deepEqual(metadata?.payload, { event_type: 'metadata', metadata: { screen: 'orders', ids: [1, 2] } });
    const update = all.filter((e) => e.name === 'update').at(-1);
    assert.equal(update?.payload.event_type, 'update');
    assert.deepEqual(Object.keys(update?.payload).sort(), ['event_type', 'transcript']);
    assert.equal(update?.payload.transcript.at(-1).role, 'agent');
    assert.equal(update?.payload.transcript.at(-1).content, 'Hello from the Retell page.');
    assert.ok(await page.evaluate(() => (window as any).audioChunks > 0), 'audio events with Float32Array samples');

    assert.equal(await page.evaluate(() => (window as any).client.isMuted), false);
    await page.evaluate(() => (window as any).client.mute());
    assert.equal(await page.evaluate(() => (window as any).client.isMuted), true);
    await page.evaluate(() => (window as any).client.unmute());
    assert.equal(await page.evaluate(() => (window as any).client.isMuted), false);

    assert.equal(await page.evaluate(() => (window as any).client.stopCall()), undefined, "stopCall returns nothing, as Retell's");
    const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 10_000, 'call_ended');
    assert.equal(ended.payload, null);
    const call = await eventually(async () => {
      const c = (await web.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
      return c.call_status === 'ended' ? c : undefined;
    }, 10_000, 'the call ended');
    assert.equal(call.disconnection_reason, 'user_hangup');
    await page.close();
  });

  test('a refused token: startCall rejects and error carries a message string', async () => {
    const { page, result } = await retellPage('not-a-real-token-0000000000000000');
    assert.equal(result, 'failed');
    const error = (await events(page)).find((e) => e.name === 'error');
    assert.equal(typeof error?.payload, 'string');
    assert.match(error!.payload as string, /^token_invalid: /);
    await page.close();
  });
});
