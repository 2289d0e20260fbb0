/**
 * Browser benchmark (`npm run bench -- browser`): the reply latency a caller sees through /demo in
 * Chromium, on the embedded engines (fvad, PocketSphinx, Flite), in real time.
 *
 * Set-up: the real server (`node src/main.ts`, started as the browser tests start it, with the
 * bundles rebuilt first) and an agent whose one conversation node says "Okay." to every turn
 * (agent defaults otherwise: adaptive end of turn, kal16 voice). Chromium (playwright-core, the
 * Debian chromium) has a fake microphone playing a WAV of the recognition bench's caller phrases
 * in Flite rms, each followed by 3.5 s of silence: longer than the latency and the reply together,
 * so each phrase is answered before the next (Chromium loops the file). The page is driven as a
 * person would: pick the agent, press "Start call", let `turns` phrases be answered, "Hang up".
 *
 * Measured per caller turn on the page's clock (performance.now()), by an init script that watches
 * the page's WebSocket and its audio graph without changing what either does:
 *   - end of speech: when the page sent the last 20 ms microphone frame above the speech level
 *     (RMS 300 of 32768, as the voice bench), i.e. the end of the caller's words as the page
 *     captured and sent them;
 *   - received: the first binary message (agent audio) after it;
 *   - heard: when the first sample of that reply reaches the output. A tap AudioWorklet on
 *     whatever the page connects to the AudioContext's destination notes the context time of the
 *     first non-zero sample after 200 ms of silence (Flite's clips turn non-zero within 2 ms, so
 *     that is the reply's start), mapped to the page's clock with getOutputTimestamp(), which
 *     counts the output latency the browser knows of.
 * "client-seen" is end of speech -> heard: what a person at the page waits between their words
 * leaving the page and the agent's voice coming out. It is the interval of the server's own e2e
 * (last voiced frame received -> first agent frame sent, reported beside it from GET
 * /v2/get-call) plus only what the browser adds: the socket both ways, the SDK's jitter buffer and
 * resampling, the audio thread's render-ahead and the output latency. It starts where the page
 * has the audio, as the server's starts where the server has it: the capture latency before the
 * page (the device, WebRTC's audio processing) is not something the page can see. The page's
 * speech level and the server's fvad can place the end of speech a 20 ms frame or two apart.
 *
 * `node bench/browser.ts` runs it alone; `runBrowserBench(options)` returns the markdown table.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { buildWeb } from '../scripts/build-web.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../test/voice/capabilities.ts';
import { NO_CHROMIUM, launchBrowser, speechTrackWav } from '../test/browser/browser.ts';
import { startWebServer } from '../test/browser/server.ts';
import { CALLER_PHRASES } from './recognition.ts';
import { fmt, machine, percentile } from './lib.ts';

export interface BrowserBenchOptions {
  /** Caller turns answered before hanging up; default 20. */
  turns?: number;
  /** Flite voice of the caller; default flite-rms (the wideband voice the recogniser hears best). */
  callerVoiceId?: string;
  log?: (line: string) => void;
}

/** The target for the client-seen p50, ms. */
const TARGET_MS = 700;
/** Speech level of a 20 ms frame, RMS of PCM16 (the voice bench's). */
const SPEECH_RMS = 300;
/** Silence after each caller phrase, ms. */
const PHRASE_GAP_MS = 3500;
/** Unvoiced time that separates two caller utterances, ms (Flite's pauses inside one are shorter). */
const UTTERANCE_GAP_MS = 800;

/** What the init script records, on the page's clock (ms). */
interface PageTimeline {
  /** Every binary message the page sent (microphone frames): [time, RMS of its PCM16]. */
  sent: [number, number][];
  /** Every binary message the page received (agent audio). */
  received: number[];
  /** Starts of agent audio at the output (first non-zero sample after silence). */
  heard: number[];
  /** The AudioContext's outputLatency and baseLatency at the last start, ms. */
  outputLatencyMs: number;
  baseLatencyMs: number;
}

interface Turn {
  endOfSpeech: number;
  received: number | undefined;
  heard: number | undefined;
}

/** Notes the context time of the first non-zero sample after 200 ms of zeros. */
const ONSET_WORKLET = `
registerProcessor('latency-onset', class extends AudioWorkletProcessor {
  quiet = Infinity;
  process(inputs) {
    const samples = inputs[0]?.[0];
    if (!samples) { this.quiet += 128; return true; }
    for (let i = 0; i < samples.length; i++) {
      if (samples[i] === 0) { this.quiet++; continue; }
      if (this.quiet >= sampleRate * 0.2) this.port.postMessage({ contextTime: currentTime + i / sampleRate });
      this.quiet = 0;
    }
    return true;
  }
});`;

/** Runs in the page before its scripts (see the header): watches the WebSocket and the audio output. */
function instrumentPage(onsetWorklet: string): void {
  const timeline: PageTimeline = { sent: [], received: [], heard: [], outputLatencyMs: NaN, baseLatencyMs: NaN };
  (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline = timeline;

  const NativeWebSocket = window.WebSocket;
  window.WebSocket = class extends NativeWebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      // Registered before the page's own handler, which hands the buffer over to its worklet.
      this.addEventListener('message', (event) => {
        if (typeof event.data !== 'string') timeline.received.push(performance.now());
      });
    }

    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      if (data instanceof ArrayBuffer) {
        const pcm = new Int16Array(data, 0, data.byteLength >> 1);
        let sum = 0;
        for (const s of pcm) sum += s * s;
        timeline.sent.push([performance.now(), pcm.length > 0 ? Math.sqrt(sum / pcm.length) : 0]);
      }
      super.send(data);
    }
  };

  const moduleUrl = URL.createObjectURL(new Blob([onsetWorklet], { type: 'text/javascript' }));
  const nativeConnect = AudioNode.prototype.connect as (this: AudioNode, ...args: unknown[]) => unknown;
  const tapped = new WeakSet<AudioNode>();
  const tap = async (node: AudioNode) => {
    const context = node.context as AudioContext;
    await context.audioWorklet.addModule(moduleUrl);
    const onset = new AudioWorkletNode(context, 'latency-onset', { numberOfInputs: 1, numberOfOutputs: 0 });
    onset.port.onmessage = (event: MessageEvent<{ contextTime: number }>) => {
      const stamp = context.getOutputTimestamp();
      timeline.heard.push((stamp.performanceTime ?? NaN) + (event.data.contextTime - (stamp.contextTime ?? NaN)) * 1000);
      timeline.outputLatencyMs = context.outputLatency * 1000;
      timeline.baseLatencyMs = context.baseLatency * 1000;
    };
    nativeConnect.call(node, onset);
  };
  AudioNode.prototype.connect = function (this: AudioNode, ...args: unknown[]) {
    const result = nativeConnect.apply(this, args);
    if (args[0] instanceof AudioDestinationNode && !tapped.has(this)) {
      tapped.add(this);
      void tap(this);
    }
    return result;
  } as AudioNode['connect'];
}

/**
 * Caller turns from the timeline: utterances are runs of voiced frames apart by less than
 * UTTERANCE_GAP_MS; each is answered by the first agent audio after its end and before the next.
 */
function turnsOf(timeline: PageTimeline): Turn[] {
  const utterances: { start: number; end: number }[] = [];
  for (const [at, level] of timeline.sent) {
    if (level < SPEECH_RMS) continue;
    const last = utterances.at(-1);
    if (last && at - last.end < UTTERANCE_GAP_MS) last.end = at;
    else utterances.push({ start: at, end: at });
  }
  return utterances.map((u, i) => {
    const next = utterances[i + 1]?.start ?? Infinity;
    const within = (times: number[]) => times.find((t) => t > u.end && t < next);
    return { endOfSpeech: u.end, received: within(timeline.received), heard: within(timeline.heard) };
  });
}

function stats(values: number[]): { p50: number; p90: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), n: sorted.length };
}

const readTimeline = (page: Page) => page.evaluate(() => (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline);

export async function runBrowserBench(options: BrowserBenchOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const header = [
    '| date | machine | load average (1/5/15 min) | turns (client / server) | client-seen p50 / p90 (ms) | received p50 / p90 (ms) | server e2e p50 / p90 (ms) | client-seen p50 < 700 ms |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const missing = NO_CHROMIUM || (hasPocketsphinx() ? false : NO_POCKETSPHINX);
  if (missing) return [...header, `| skipped: ${missing} | | | | | | | |`].join('\n');

  const wanted = options.turns ?? 20;
  log('browser bench: building the web bundles');
  await buildWeb();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-browser-'));
  const web = await startWebServer();
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  try {
    const flow = await web.api('POST', '/create-conversation-flow', {
      start_node_id: 'loop',
      nodes: [{ id: 'loop', type: 'conversation', instruction: { type: 'static_text', text: 'Okay.' } }],
    });
    if (flow.status !== 201) throw new Error(`flow: ${flow.status} ${JSON.stringify(flow.json)}`);
    const agent = await web.api('POST', '/create-agent', {
      agent_name: 'Latency',
      response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id },
    });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
    const agentId: string = agent.json.agent_id;

    const phrases = CALLER_PHRASES.map((p) => ({ text: p.text, silenceAfterMs: PHRASE_GAP_MS }));
    const wav = path.join(dir, 'caller.wav');
    const wavMs = await speechTrackWav(wav, 3000, phrases, options.callerVoiceId ?? 'flite-rms');
    browser = await launchBrowser({ microphoneWav: wav });
    const page = await browser.newPage();
    await page.addInitScript(instrumentPage, ONSET_WORKLET);
    await page.goto(`${web.baseUrl}/demo`);
    await page.waitForSelector(`#agent option[value="${agentId}"]`, { state: 'attached' });
    await page.selectOption('#agent', agentId);
    await page.click('#start');
    await page.waitForSelector('#status[data-phase="in_call"]', { timeout: 15_000 });
    const callId = (await page.textContent('#status code')) ?? '';
    log(`browser bench: call ${callId}, waiting for ${wanted} answered turns (the caller's file is ${fmt(wavMs / 1000, 0)} s, looped)`);

    const deadline = Date.now() + wanted * (wavMs / phrases.length) * 2 + 30_000;
    for (;;) {
      const answered = turnsOf(await readTimeline(page)).filter((t) => t.heard !== undefined).length;
      if (answered >= wanted) break;
      if (Date.now() > deadline) throw new Error(`only ${answered} of ${wanted} turns answered in time`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    // Hang up once the last reply has played out, so the server has recorded its latency too.
    await page.waitForFunction(() => {
      const received = (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline.received;
      return performance.now() - (received.at(-1) ?? 0) > 500;
    });
    await page.click('#hangup');
    await page.waitForSelector('#finished[data-status="ended"]', { timeout: 30_000 });
    const timeline = await readTimeline(page);
    const call = await web.api('GET', `/v2/get-call/${callId}`);
    if (call.status !== 200) throw new Error(`get-call: ${call.status}`);
    if (browser.errors.length > 0) log(`browser bench: page errors: ${browser.errors.join('; ')}`);

    const turns = turnsOf(timeline);
    const answered = turns.filter((t) => t.heard !== undefined && t.received !== undefined);
    const heard = stats(answered.map((t) => t.heard! - t.endOfSpeech));
    const received = stats(answered.map((t) => t.received! - t.endOfSpeech));
    const playout = stats(answered.map((t) => t.heard! - t.received!));
    const e2e = stats((call.json.latency?.e2e?.values as number[] | undefined) ?? []);
    const load = os.loadavg().map((n) => n.toFixed(2)).join(' / ');
    const date = new Date().toISOString().slice(0, 10);
    return [
      ...header,
      `| ${date} | ${machine()} | ${load} | ${heard.n} / ${e2e.n} | ${fmt(heard.p50, 0)} / ${fmt(heard.p90, 0)} | ${fmt(received.p50, 0)} / ${fmt(received.p90, 0)} | ${fmt(e2e.p50, 0)} / ${fmt(e2e.p90, 0)} | ${heard.p50 < TARGET_MS ? 'yes' : 'no'} |`,
      '',
      `Caller: ${phrases.length} phrases in ${options.callerVoiceId ?? 'flite-rms'}, ${PHRASE_GAP_MS / 1000} s apart, ${turns.length} utterances sent, ${answered.length} answered. ` +
        `From received to heard (jitter buffer, render-ahead, output latency): p50 ${fmt(playout.p50, 0)} ms, p90 ${fmt(playout.p90, 0)} ms; ` +
        `the AudioContext reports an output latency of ${fmt(timeline.outputLatencyMs, 0)} ms (base ${fmt(timeline.baseLatencyMs, 0)} ms).`,
    ].join('\n');
  } finally {
    await browser?.close();
    await web.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${await runBrowserBench()}\n`);
