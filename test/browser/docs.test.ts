/**
 * The API reference (/docs, Swagger UI) in real Chromium under its content security policy: the
 * page renders every operation and the browser reports no violation and no error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeWav } from '../../src/lib/wav.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { ARTIFACTS_DIR, type Browser, NO_CHROMIUM, eventually, launchBrowser, screenshot } from './browser.ts';

describe('/docs in Chromium', { skip: NO_CHROMIUM, timeout: 120_000 }, () => {
  let h: Harness;
  let browser: Browser;
  let baseUrl: string;

  before(async () => {
    h = await startHarness('sqlite');
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`;
    // The launcher wants a microphone file; the docs never use it.
    const silence = path.join(ARTIFACTS_DIR, 'docs-silence.wav');
    fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
    fs.writeFileSync(silence, encodeWav({ sampleRate: 16_000, channels: 1, samples: new Int16Array(1_600) }));
    browser = await launchBrowser({ microphoneWav: silence });
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });

  test('renders the operations with no CSP violation or console error', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        (window as unknown as { reportViolation: (text: string) => void }).reportViolation(`${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    const response = await page.goto(`${baseUrl}/docs`);
    assert.match(String(response?.headers()['content-security-policy']), /script-src 'self'/);
    const operations = await eventually(async () => {
      const count = await page.locator('.opblock').count();
      return count >= 30 ? count : 0;
    }, 30_000, 'the operations to render');
    assert.ok(operations >= 30, `${operations} operations`);
    assert.ok(await page.getByText('create-web-call').first().isVisible());
    // Expanding an operation renders its schemas (more of the UI's code paths under the policy).
    await page.locator('.opblock-summary').first().click();
    await eventually(() => page.locator('.opblock-body').first().isVisible(), 10_000, 'an operation to expand');
    await screenshot(page, 'docs');
    assert.deepEqual(violations, [], 'no CSP violation');
    assert.deepEqual(browser.errors, [], 'no console error');
  });
});
