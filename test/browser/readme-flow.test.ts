/**
 * The README's quick-start flow, exactly as the README gives it (read from README.md), through
 * /demo in Chromium on the embedded engines, with a wideband Flite voice (rms) on the fake
 * microphone saying "I would like to book an appointment": the keyword edge is taken (the agent
 * says "You are booked. Goodbye."), not the fallback ("Goodbye."). With slt, the wideband voice
 * whose keyword branches the recogniser takes least often (BENCHMARKS.md, "Recognition"), the
 * sentence was heard as "i would like to put in a blind man" in some runs, depending on where the
 * browser's capture cut the utterance: one sentence is a sample of one, so the test speaks with
 * the voice the recogniser hears best, and the benchmark measures the rest.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, SILENCE_BEFORE_REQUEST_MS, eventually, launchBrowser, speechWav } from './browser.ts';
import { type WebServer, startWebServer } from './server.ts';

const skip = NO_CHROMIUM || NOT_BUILT || (hasPocketsphinx() ? false : NO_POCKETSPHINX);

/** The body of the README's create-conversation-flow request. */
function readmeFlow(): unknown {
  const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const m = /create-conversation-flow -d '([^']+)'/.exec(readme);
  assert.ok(m, 'the README has the quick-start flow');
  return JSON.parse(m[1]!);
}

describe("the README's quick-start flow through /demo", { skip, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;

  before(async () => {
    web = await startWebServer({});
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'readme-flow-microphone.wav'), 'i would like to book an appointment', SILENCE_BEFORE_REQUEST_MS, 20_000, 'flite-rms');
    browser = await launchBrowser({ microphoneWav: wav });
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('a wideband caller asking for an appointment takes the booking branch', async () => {
    const flow = await web.api('POST', '/create-conversation-flow', readmeFlow());
    assert.equal(flow.status, 201, JSON.stringify(flow.json));
    const agent = await web.api('POST', '/create-agent', { agent_name: 'Reception', response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
    assert.equal(agent.status, 201);
    const demo = await browser.newPage();
    await demo.goto(`${web.baseUrl}/demo`);
    await demo.waitForSelector(`#agent option[value="${agent.json.agent_id}"]`, { state: 'attached' });
    await demo.selectOption('#agent', agent.json.agent_id);
    await demo.click('#start');
    await demo.waitForSelector('#status[data-phase="in_call"]', { timeout: 15_000 });
    await eventually(async () => /thanks for calling Acme/i.test((await demo.textContent('#live-transcript')) ?? ''), 15_000, 'the greeting');
    await demo.waitForSelector('#finished', { timeout: 60_000 });
    assert.equal(await demo.textContent('#ended-reason'), 'agent_hangup');
    await demo.waitForSelector('#finished[data-status="ended"]', { timeout: 20_000 });
    const transcript = (await demo.textContent('#final-transcript')) ?? '';
    assert.match(transcript, /You are booked\. Goodbye\./, `the booking branch was taken: ${transcript}`);
    // The SDK's default carried it over WebRTC: Opus from Chromium's microphone to the recogniser.
    const calls = await web.api('POST', '/v2/list-calls', { limit: 1 });
    assert.equal(calls.json[0].media.transport, 'webrtc', JSON.stringify(calls.json[0].media));
    assert.equal(calls.json[0].media.codec, 'opus');
  });
});
