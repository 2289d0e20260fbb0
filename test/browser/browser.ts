/**
 * Real-browser test helpers: Debian chromium driven by playwright-core with the flags of
 * DECISIONS.md (fake microphone fed from a WAV), console-error capture, screenshots as artefacts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { encodeWav } from '../../src/lib/wav.ts';
import { ROOT } from '../helpers/process.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const NO_CHROMIUM = fs.existsSync(CHROMIUM_PATH) ? false : 'no chromium: apt-get install chromium';
export const ARTIFACTS_DIR = path.join(ROOT, '.test-artifacts', 'browser');
export const WEB_DIST_DIR = path.join(ROOT, 'dist/web');
export const NOT_BUILT = fs.existsSync(path.join(WEB_DIST_DIR, 'manifest.json')) ? false : 'dist/web is not built: run node scripts/build-web.ts (npm test does)';

export interface Browser {
  context: BrowserContext;
  /** A new page whose console errors and page errors are collected. */
  newPage(): Promise<Page>;
  /** Console errors and uncaught exceptions seen on any page so far. */
  errors: string[];
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** WAV file fed to the fake microphone (Chromium loops it). */
  microphoneWav: string;
  /** Grant the microphone without a prompt (default true); false leaves the request unanswered → denied. */
  grantMicrophone?: boolean;
  /**
   * Environment for the browser's process with its audio played out (benchmarks that record the
   * output: bench/speaker.ts); without it the browser is muted, as playwright makes headless ones.
   */
  audioEnv?: Record<string, string>;
}

/** Launches chromium with a fresh profile and the fake microphone. */
export async function launchBrowser(options: LaunchOptions): Promise<Browser> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-'));
  const args = [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-audio-capture=${options.microphoneWav}`,
    // WebRTC calls stay on loopback: Chromium gathers 127.0.0.1 candidates (the test servers bind there).
    '--allow-loopback-in-peer-connection',
  ];
  if (options.grantMicrophone !== false) args.push('--use-fake-ui-for-media-stream');
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args,
    ...(options.audioEnv ? { env: { ...process.env, ...options.audioEnv }, ignoreDefaultArgs: ['--mute-audio'] } : {}),
    viewport: { width: 1200, height: 900 },
  });
  const errors: string[] = [];
  return {
    context,
    errors,
    async newPage() {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(`console: ${message.text()} [${message.location().url}] (${page.url()})`);
      });
      page.on('pageerror', (error) => errors.push(`page error: ${error.message} (${page.url()})`));
      return page;
    },
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Saves a full-page screenshot under .test-artifacts/browser/. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const file = path.join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * The silence before a caller's request, for calls whose greeting must play whole first. Chromium's
 * fake microphone starts its file when the page opens the microphone, before the call is joined:
 * the silence covers the join (some 1-2 s, 5 s and more on a busy machine) and the greeting (about
 * 3.5 s). Spoken earlier, the request cuts the greeting off and the call ends before the test looks.
 */
export const SILENCE_BEFORE_REQUEST_MS = 10_000;

/**
 * A WAV for the fake microphone: `leadSilenceMs` of silence, Flite speech of `text`, then
 * `tailSilenceMs` of silence (Chromium loops the file; the tail keeps the repeat far away), in
 * Flite voice `voiceId` (default flite-kal16).
 */
export async function speechWav(file: string, text: string, leadSilenceMs: number, tailSilenceMs: number, voiceId = 'flite-kal16'): Promise<string> {
  await speechTrackWav(file, leadSilenceMs, [{ text, silenceAfterMs: tailSilenceMs }], voiceId);
  return file;
}

/**
 * A WAV of several utterances for the fake microphone: `leadSilenceMs` of silence, then each
 * utterance's Flite speech followed by its `silenceAfterMs`, in Flite voice `voiceId`. Returns
 * the file's length in ms.
 */
export async function speechTrackWav(
  file: string,
  leadSilenceMs: number,
  utterances: readonly { text: string; silenceAfterMs: number }[],
  voiceId = 'flite-kal16',
): Promise<number> {
  const rate = 16_000;
  const samplesOf = (ms: number) => Math.round((rate * ms) / 1000);
  const parts: Int16Array[] = [new Int16Array(samplesOf(leadSilenceMs))];
  const tts = new FliteTts();
  try {
    for (const utterance of utterances) {
      for await (const chunk of tts.synthesize(utterance.text, { voiceId })) parts.push(chunk);
      parts.push(new Int16Array(samplesOf(utterance.silenceAfterMs)));
    }
  } finally {
    await tts.close();
  }
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    samples.set(part, offset);
    offset += part.length;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, encodeWav({ sampleRate: rate, channels: 1, samples }));
  return (samples.length / rate) * 1000;
}

/** Asserts the page has no horizontal overflow at `width` px (nothing to scroll sideways). */
export async function assertFitsWidth(page: Page, width: number): Promise<void> {
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  if (scrollWidth > width) {
    const wide = await page.evaluate((w) => Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > w + 1 && !e.closest('.table-wrap')).slice(0, 5).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`), width);
    throw new Error(`the page is ${scrollWidth} px wide at ${width} px: ${wide.join(', ')}`);
  }
}

/** Polls `check` until it returns a truthy value (or throws after `timeoutMs`). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : JSON.stringify(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
