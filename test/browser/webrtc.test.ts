/**
 * WebRTC web calls in real Chromium against the real server (issue 23): the browser SDK's default
 * joins over WebRTC (call_started says so; the call's media is Opus), hang-up works from the page
 * and from the agent, and a browser whose UDP is blocked falls back to the WebSocket with the same
 * access token.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, eventually, launchBrowser, speechWav } from './browser.ts';
import { type WebServer, startWebServer } from './server.ts';

const skip = NO_CHROMIUM || NOT_BUILT;

interface PageEvent {
  name: string;
  payload: any;
}

describe('WebRTC web calls in Chromium', { skip, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;
  let greeter: string;
  let bye: string;
  let goodbye: string;

  before(async () => {
    // No ICE-TCP: a browser without UDP then has no way to connect but the WebSocket.
    web = await startWebServer({ RTC_ICE_TCP: 'false' });
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'webrtc-microphone.wav'), 'hello', 8000, 12_000);
    browser = await launchBrowser({ microphoneWav: wav });
    greeter = await agent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there, how can I help?' } }] });
    bye = await agent({ start_node_id: 'bye', nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Thank you for calling. That is all for today. Goodbye.' } }] });
    goodbye = await agent({ start_node_id: 'bye', nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } }] });
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  async function agent(flow: unknown): Promise<string> {
    const f = await web.api('POST', '/create-conversation-flow', flow);
    assert.equal(f.status, 201, JSON.stringify(f.json));
    const a = await web.api('POST', '/create-agent', { agent_name: 'WebRTC', response_engine: { type: 'conversation_flow', conversation_flow_id: f.json.conversation_flow_id } });
    assert.equal(a.status, 201);
    return a.json.agent_id as string;
  }

  /** A page on the server's origin with the SDK loaded and a started call (the SDK's defaults but the fallback's bound). */
  async function startCall(on: Browser, agentId: string, options: { blockUdp?: boolean } = {}): Promise<{ page: Page; callId: string; result: string }> {
    const created = await web.api('POST', '/v2/create-web-call', { agent_id: agentId });
    assert.equal(created.status, 201);
    const page = await on.newPage();
    await page.goto(`${web.baseUrl}/demo`);
    // A network that lets no UDP through (and has no TURN): the browser may use relayed candidates
    // only, and has none, so ICE cannot connect, exactly as behind a UDP-blocking firewall.
    if (options.blockUdp) {
      await page.evaluate(() => {
        const Native = window.RTCPeerConnection;
        window.RTCPeerConnection = class extends Native {
          constructor(config?: RTCConfiguration) {
            super({ ...config, iceTransportPolicy: 'relay' });
          }
        };
      });
    }
    const result = await page.evaluate(async (token) => {
      const { WebCallClient } = await import(`${location.origin}/sdk/web-sdk.js`);
      const w = window as any;
      w.events = [];
      w.client = new WebCallClient({ webrtcConnectTimeoutMs: 3_000 });
      for (const name of ['call_started', 'call_ended', 'agent_stop_talking', 'error']) w.client.on(name, (payload: unknown) => w.events.push({ name, payload }));
      return w.client.startCall({ accessToken: token }).then(() => 'started', (e: { code: string }) => e.code);
    }, created.json.access_token as string);
    return { page, callId: created.json.call_id as string, result };
  }
  const events = (page: Page) => page.evaluate(() => (window as any).events as PageEvent[]);
  const media = async (callId: string) => (await web.api('GET', `/v2/get-call/${callId}`)).json;

  test('the SDK joins over WebRTC by default; the agent plays through a media element; the page hangs up', async () => {
    const { page, callId, result } = await startCall(browser, greeter);
    assert.equal(result, 'started');
    const started = (await events(page)).find((e) => e.name === 'call_started')!;
    assert.equal(started.payload.transport, 'webrtc');
    assert.equal(started.payload.call_id, callId);
    // The agent's track plays from a media element; the counters come from WebRTC's statistics.
    await eventually(async () => ((await page.evaluate(() => (window as any).client.stats)) as { playedSamples: number }).playedSamples > 0, 5_000, 'played samples');
    await eventually(async () => (await events(page)).find((e) => e.name === 'agent_stop_talking'), 20_000, 'the greeting sent');
    await page.evaluate(() => (window as any).client.stopCall());
    const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 10_000, 'call_ended');
    assert.equal(ended.payload.disconnection_reason, 'user_hangup');
    const call = await eventually(async () => {
      const c = await media(callId);
      return c.media ? c : undefined;
    }, 15_000, 'the call stored');
    assert.equal(call.disconnection_reason, 'user_hangup');
    assert.equal(call.media.transport, 'webrtc');
    assert.equal(call.media.codec, 'opus');
    assert.ok(call.media.packets_in > 25, `packets_in ${call.media.packets_in}: the microphone was sent`);
    assert.ok(call.media.packets_out > 10, `packets_out ${call.media.packets_out}: the greeting was sent`);
    await page.close();
  });

  test('ICE restart mid-call: the SDK re-offers on the session, the call goes on and ends as the page says', async () => {
    const { page, callId, result } = await startCall(browser, greeter);
    assert.equal(result, 'started');
    await eventually(async () => (await events(page)).find((e) => e.name === 'agent_stop_talking'), 20_000, 'the greeting sent');
    const before = (await media(callId)).media;
    assert.equal(before, null, 'the call is still running');
    const restarted = await page.evaluate(() => (window as any).client.restartIce().then(() => 'ok', (e: { code: string; message: string }) => `${e.code}: ${e.message}`));
    assert.equal(restarted, 'ok');
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // the microphone on the new path
    await page.evaluate(() => (window as any).client.stopCall());
    const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 10_000, 'call_ended');
    assert.equal(ended.payload.disconnection_reason, 'user_hangup');
    const call = await eventually(async () => {
      const c = await media(callId);
      return c.media ? c : undefined;
    }, 15_000, 'the call stored');
    assert.equal(call.media.transport, 'webrtc');
    // The microphone's 20 ms packets arrived all along, also after the restart (a broken path would lose the last 2 s).
    const expected = (call.end_timestamp - call.start_timestamp) / 20;
    assert.ok(call.media.packets_in > 0.85 * expected, `packets_in ${call.media.packets_in} of about ${Math.round(expected)}`);
    assert.deepEqual((await events(page)).filter((e) => e.name === 'error'), []);
    await page.close();
  });

  test('the agent hangs up: call_ended reaches the page over the data channel', async () => {
    const { page, callId, result } = await startCall(browser, bye);
    assert.equal(result, 'started');
    const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 20_000, 'call_ended');
    assert.equal(ended.payload.disconnection_reason, 'agent_hangup');
    // The page hears the end as it happens; the call is stored as ended a moment later.
    const stored = await eventually(async () => {
      const c = await media(callId);
      return c.call_status === 'ended' ? c : undefined;
    }, 10_000, 'the call stored as ended');
    assert.equal(stored.disconnection_reason, 'agent_hangup');
    await page.close();
  });

  test('an agent whose whole call is one word: call_ended, never connection_lost, reaches the page', async () => {
    for (let i = 0; i < 3; i++) {
      const { page, callId, result } = await startCall(browser, goodbye);
      assert.equal(result, 'started');
      const ended = await eventually(async () => (await events(page)).find((e) => e.name === 'call_ended'), 20_000, 'call_ended');
      const errors = (await events(page)).filter((e) => e.name === 'error').map((e) => e.payload.code);
      assert.deepEqual({ reason: ended.payload.disconnection_reason, errors }, { reason: 'agent_hangup', errors: [] }, `call ${i + 1} (${callId})`);
      await page.close();
    }
  });

  test('a browser without UDP falls back to the WebSocket with the same token', async () => {
    const { page, callId, result } = await startCall(browser, greeter, { blockUdp: true });
    assert.equal(result, 'started');
    const started = (await events(page)).find((e) => e.name === 'call_started')!;
    assert.equal(started.payload.transport, 'websocket');
    assert.equal(started.payload.call_id, callId);
    await page.evaluate(() => (window as any).client.stopCall());
    const call = await eventually(async () => {
      const c = await media(callId);
      return c.media ? c : undefined;
    }, 15_000, 'the call stored');
    assert.equal(call.media.transport, 'websocket');
    assert.equal(call.disconnection_reason, 'user_hangup');
    assert.deepEqual(browser.errors, []);
    await page.close();
  });
});
