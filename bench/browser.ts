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
 * The same is measured over both transports in one run (issue 23's target: WebRTC's client-seen
 * p50 no more than the WebSocket's + 30 ms): one call with the SDK's default (WebRTC), and one on a
 * page without RTCPeerConnection (the SDK falls back to the WebSocket with the same code). So that
 * both are measured alike, the end of speech is read from the microphone itself (a tap on the
 * stream getUserMedia gives the page, 20 ms RMS frames, the same code on both), and the reply's
 * start through the same stages on both: the played audio as a MediaStream into a tap
 * AudioContext of our own (a MediaStreamSource into the onset worklet, a silent branch to the
 * output). Over WebRTC that stream is the <audio> element's; over the WebSocket it is what the SDK
 * connects to its AudioContext's output, sent on to a MediaStreamDestination as well. A stream
 * into another context adds that context's FIFO and render-ahead, which tapping the WebSocket in
 * the SDK's own context (the bench's first version) skipped and the <audio> stream could not:
 * that tap is still taken over the WebSocket and printed beside it ("the stream tap adds"). A reply
 * starts at the first sample above ONSET_LEVEL (-40 dBFS) after 200 ms below it (see there).
 *
 * At the speaker: where Debian's `pulseaudio` is installed (`SETUP_BENCH=1 bash scripts/setup.sh`),
 * Chromium plays to a private sound server's null sink, unmuted, and the sink's monitor is recorded
 * (bench/speaker.ts): "heard at the speaker" is the same onset found in that recording, what a
 * person would hear, with none of the tap's own stages. Both parts print it beside the tap.
 *
 * "received" is the reply's first packet at the page: over the WebSocket the first binary message
 * after the end of speech; over WebRTC the inbound-rtp `lastPacketReceivedTimestamp` of the first
 * getStats() sample (every 50 ms) whose `packetsReceived` grew. "received to heard" is then the
 * browser's own share. Over WebRTC the receiver's jitter buffer during each reply (the getStats
 * deltas of `jitterBufferDelay`, `jitterBufferTargetDelay`, `jitterBufferMinimumDelay` over
 * `jitterBufferEmittedCount`) and the whole call's concealment, time-stretching, discards and the
 * sender's pacer delay are printed too.
 *
 * A second part (`npm run bench -- browser-playout`, `runBrowserPlayoutBench`) measures the
 * browser's share alone, without a recogniser (so a loaded machine cannot end its calls
 * `error_asr`): received -> heard for each reply of an agent that answers reminders (measurePlayout).
 *
 * `node bench/browser.ts [turns]` runs it alone; `runBrowserBench(options)` returns the markdown table.
 * BROWSER_BENCH_DUMP=prefix writes each call's page timeline to `prefix-<transport>.json`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { WebSocketServer } from 'ws';
import { wsDataToBuffer } from '../src/lib/ws-data.ts';
import { buildWeb } from '../scripts/build-web.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../test/voice/capabilities.ts';
import { NO_CHROMIUM, launchBrowser, speechTrackWav } from '../test/browser/browser.ts';
import { startWebServer } from '../test/browser/server.ts';
import { CALLER_PHRASES } from './recognition.ts';
import { fmt, machine, percentile } from './lib.ts';
import { NO_PULSEAUDIO, ONSET_LEVEL, type Speaker, startSpeaker } from './speaker.ts';

export interface BrowserBenchOptions {
  /** Caller turns answered before hanging up; default 20. */
  turns?: number;
  /** Flite voice of the caller; default flite-rms (the wideband voice the recogniser hears best). */
  callerVoiceId?: string;
  log?: (line: string) => void;
}

/** The issue's target for the client-seen p50, ms. */
const TARGET_MS = 700;
/** Speech level of a 20 ms frame, RMS of PCM16 (the voice bench's). */
const SPEECH_RMS = 300;
/** Silence after each caller phrase, ms. */
const PHRASE_GAP_MS = 3500;
/** Unvoiced time that separates two caller utterances, ms (Flite's pauses inside one are shorter). */
const UTTERANCE_GAP_MS = 800;

/** What the init script records, on the page's clock (ms). */
interface PageTimeline {
  /** Every 20 ms frame of the microphone: [time of its end, RMS of its PCM16]. */
  sent: [number, number][];
  /** Every binary message the page received (agent audio). */
  received: number[];
  /** Starts of agent audio as tapped alike on both transports: the played stream into a tap context (see the header). */
  heard: number[];
  /** Over the WebSocket: starts of agent audio in the SDK's own AudioContext (the old tap, to show what the stream tap adds). */
  heardDirect: number[];
  /** Over WebRTC: the peer connection's getStats() every STATS_EVERY_MS (receiver and sender). */
  rtc: RtcSample[];
  /** The AudioContext's outputLatency and baseLatency at the last start, ms. */
  outputLatencyMs: number;
  baseLatencyMs: number;
  /** The page's performance.timeOrigin (epoch ms): its times on the speaker recording's clock (bench/speaker.ts). */
  timeOrigin: number;
}

/** One getStats() sample of the WebRTC call: the inbound-rtp and outbound-rtp counters used here (cumulative, as Chromium gives them). */
interface RtcSample {
  /** Page clock, ms. */
  at: number;
  packetsReceived: number;
  /** The last packet's arrival, on the page's clock (ms). */
  lastPacketAt: number;
  /** Seconds, summed over emitted samples (jitterBufferDelay and its target and minimum). */
  jitterBufferDelay: number;
  jitterBufferTargetDelay: number;
  jitterBufferMinimumDelay: number;
  jitterBufferEmittedCount: number;
  totalProcessingDelay: number;
  concealedSamples: number;
  silentConcealedSamples: number;
  concealmentEvents: number;
  insertedSamplesForDeceleration: number;
  removedSamplesForAcceleration: number;
  packetsDiscarded: number;
  /** Sender: packets sent and their summed time in the send pacer, s. */
  packetsSent: number;
  totalPacketSendDelay: number;
  /** The `media-playout` report (the audio device's side, after the jitter buffer): summed playout delay (s) over samples played, and samples synthesized (s). */
  playoutDelay: number;
  playoutSamples: number;
  playoutSynthesized: number;
}

interface Turn {
  endOfSpeech: number;
  received: number | undefined;
  heard: number | undefined;
  heardDirect: number | undefined;
  /** The reply's start in the speaker's recording (bench/speaker.ts), on the page's clock. */
  heardSpeaker: number | undefined;
  /** Over WebRTC, the receiver's jitter buffer during this reply (from getStats deltas), ms. */
  jitterBufferMs: number | undefined;
  jitterBufferTargetMs: number | undefined;
  jitterBufferMinimumMs: number | undefined;
}

/** How often the init script samples the WebRTC call's getStats(), ms. */
const STATS_EVERY_MS = 50;

/**
 * Two taps: `latency-onset` notes the context time of the first sample above ONSET_LEVEL after
 * 200 ms at or below it; `mic-level` posts each 20 ms frame's RMS (PCM16 scale) with its end time.
 */
const WORKLETS = `
registerProcessor('latency-onset', class extends AudioWorkletProcessor {
  quiet = Infinity;
  process(inputs) {
    const samples = inputs[0]?.[0];
    if (!samples) { this.quiet += 128; return true; }
    for (let i = 0; i < samples.length; i++) {
      if (Math.abs(samples[i]) <= ${ONSET_LEVEL}) { this.quiet++; continue; }
      if (this.quiet >= sampleRate * 0.2) this.port.postMessage({ contextTime: currentTime + i / sampleRate });
      this.quiet = 0;
    }
    return true;
  }
});
registerProcessor('mic-level', class extends AudioWorkletProcessor {
  sum = 0;
  count = 0;
  process(inputs) {
    const samples = inputs[0]?.[0];
    if (!samples) return true;
    const frame = Math.round(sampleRate * 0.02);
    for (let i = 0; i < samples.length; i++) {
      const v = samples[i] * 32768;
      this.sum += v * v;
      if (++this.count < frame) continue;
      this.port.postMessage({ contextTime: currentTime + (i + 1) / sampleRate, rms: Math.sqrt(this.sum / this.count) });
      this.sum = 0;
      this.count = 0;
    }
    return true;
  }
});`;

/**
 * Runs in the page before its scripts (see the header): taps the microphone, the WebSocket's
 * incoming audio and the agent's audio where it plays. `websocket`: the page has no
 * RTCPeerConnection, so the SDK's default transport falls back to the WebSocket.
 */
function instrumentPage({ worklets, websocket, statsEveryMs }: { worklets: string; websocket: boolean; statsEveryMs: number }): void {
  const timeline: PageTimeline = { sent: [], received: [], heard: [], heardDirect: [], rtc: [], outputLatencyMs: NaN, baseLatencyMs: NaN, timeOrigin: performance.timeOrigin };
  (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline = timeline;
  if (websocket) delete (window as unknown as { RTCPeerConnection?: unknown }).RTCPeerConnection;
  else {
    // The SDK's peer connection, sampled with getStats() while it lives (it is not changed).
    const NativePeerConnection = window.RTCPeerConnection;
    window.RTCPeerConnection = class extends NativePeerConnection {
      constructor(configuration?: RTCConfiguration) {
        super(configuration);
        const timer = setInterval(() => {
          if (this.connectionState === 'closed') return clearInterval(timer);
          void this.getStats().then((report) => {
            const sample = { at: performance.now() } as Record<string, number>;
            report.forEach((s: Record<string, unknown>) => {
              if (s['type'] === 'media-playout') {
                sample['playoutDelay'] = Number(s['totalPlayoutDelay'] ?? NaN);
                sample['playoutSamples'] = Number(s['totalSamplesCount'] ?? NaN);
                sample['playoutSynthesized'] = Number(s['synthesizedSamplesDuration'] ?? NaN);
              }
              if (s['kind'] !== 'audio' || (s['type'] !== 'inbound-rtp' && s['type'] !== 'outbound-rtp')) return;
              for (const [key, value] of Object.entries(s)) if (typeof value === 'number') sample[key] = value;
              if (s['type'] === 'inbound-rtp') sample['lastPacketAt'] = Number(s['lastPacketReceivedTimestamp'] ?? NaN) - performance.timeOrigin;
            });
            timeline.rtc.push(sample as unknown as RtcSample);
          });
        }, statsEveryMs);
      }
    };
  }

  const NativeWebSocket = window.WebSocket;
  window.WebSocket = class extends NativeWebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      // Registered before the page's own handler, which hands the buffer over to its worklet.
      this.addEventListener('message', (event) => {
        if (typeof event.data !== 'string') timeline.received.push(performance.now());
      });
    }
  };

  const moduleUrl = URL.createObjectURL(new Blob([worklets], { type: 'text/javascript' }));
  /** A context time on the page's clock (counting the output latency the browser knows of). */
  const pageTime = (context: AudioContext, contextTime: number) => {
    const stamp = context.getOutputTimestamp();
    return (stamp.performanceTime ?? NaN) + (contextTime - (stamp.contextTime ?? NaN)) * 1000;
  };
  const onsetTap = async (context: AudioContext, heard = timeline.heard): Promise<AudioWorkletNode> => {
    await context.audioWorklet.addModule(moduleUrl);
    const onset = new AudioWorkletNode(context, 'latency-onset', { numberOfInputs: 1, numberOfOutputs: 0 });
    onset.port.onmessage = (event: MessageEvent<{ contextTime: number }>) => {
      heard.push(pageTime(context, event.data.contextTime));
      timeline.outputLatencyMs = context.outputLatency * 1000;
      timeline.baseLatencyMs = context.baseLatency * 1000;
    };
    return onset;
  };
  /** A stream into a worklet of our own context, through a silent branch to the output (so it is pulled). */
  const streamTap = async (stream: MediaStream, make: (context: AudioContext) => Promise<AudioWorkletNode>) => {
    const context = new AudioContext();
    await context.resume();
    const node = await make(context);
    const source = context.createMediaStreamSource(stream);
    const mute = context.createGain();
    mute.gain.value = 0;
    nativeConnect.call(source, node);
    nativeConnect.call(source, mute);
    nativeConnect.call(mute, context.destination);
  };

  // The microphone: the stream the page asks for, its level every 20 ms.
  const nativeGetUserMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = async (constraints?: MediaStreamConstraints) => {
    const stream = await nativeGetUserMedia(constraints);
    void streamTap(stream, async (context) => {
      await context.audioWorklet.addModule(moduleUrl);
      const level = new AudioWorkletNode(context, 'mic-level', { numberOfInputs: 1, numberOfOutputs: 0 });
      level.port.onmessage = (event: MessageEvent<{ contextTime: number; rms: number }>) => timeline.sent.push([pageTime(context, event.data.contextTime), event.data.rms]);
      return level;
    });
    return stream;
  };

  // The agent over WebRTC: the <audio> element's stream.
  const srcObject = Object.getOwnPropertyDescriptor(HTMLMediaElement.prototype, 'srcObject')!;
  Object.defineProperty(HTMLMediaElement.prototype, 'srcObject', {
    ...srcObject,
    set(this: HTMLMediaElement, value: MediaProvider | null) {
      srcObject.set!.call(this, value);
      if (value instanceof MediaStream && value.getAudioTracks().length > 0) void streamTap(value, onsetTap);
    },
  });

  // The agent over the WebSocket: whatever the page connects to its AudioContext's output, as a
  // stream into a tap context like the <audio> element's above (the same stages on both
  // transports), and directly in the SDK's context (heardDirect: what that stage costs).
  const nativeConnect = AudioNode.prototype.connect as (this: AudioNode, ...args: unknown[]) => unknown;
  const tapped = new WeakSet<AudioNode>();
  AudioNode.prototype.connect = function (this: AudioNode, ...args: unknown[]) {
    const result = nativeConnect.apply(this, args);
    if (args[0] instanceof AudioDestinationNode && !tapped.has(this)) {
      tapped.add(this);
      const context = this.context as AudioContext;
      void onsetTap(context, timeline.heardDirect).then((onset) => nativeConnect.call(this, onset));
      const played = context.createMediaStreamDestination();
      nativeConnect.call(this, played);
      void streamTap(played.stream, onsetTap);
    }
    return result;
  } as AudioNode['connect'];
}

/**
 * Caller turns from the timeline: utterances are runs of voiced frames apart by less than
 * UTTERANCE_GAP_MS; each is answered by the first agent audio after its end and before the next.
 */
function turnsOf(timeline: PageTimeline, atSpeaker: number[] = []): Turn[] {
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
    const rtc = replyStats(timeline.rtc, u.end, next);
    return { endOfSpeech: u.end, received: within(timeline.received) ?? rtc.received, heard: within(timeline.heard), heardDirect: within(timeline.heardDirect), heardSpeaker: within(atSpeaker), ...rtc.jitterBuffer };
  });
}

/**
 * Over WebRTC, one reply from the getStats samples between the end of speech and the next
 * utterance: its first packet's arrival (the first sample whose packetsReceived grew: its last
 * packet's arrival, less 20 ms for each packet after the two the server sends at once), and the
 * receiver's mean jitter-buffer delay, target and minimum over the samples emitted meanwhile.
 */
function replyStats(samples: RtcSample[], from: number, until: number): { received: number | undefined; jitterBuffer: Pick<Turn, 'jitterBufferMs' | 'jitterBufferTargetMs' | 'jitterBufferMinimumMs'> } {
  const start = samples.findIndex((s) => s.at > from);
  const none = { received: undefined, jitterBuffer: { jitterBufferMs: undefined, jitterBufferTargetMs: undefined, jitterBufferMinimumMs: undefined } };
  if (start < 1) return none;
  const before = samples[start - 1]!;
  const first = samples.slice(start).find((s) => s.at < until && s.packetsReceived > before.packetsReceived);
  const last = samples.filter((s) => s.at < until).at(-1);
  if (!first || !last) return none;
  const emitted = last.jitterBufferEmittedCount - before.jitterBufferEmittedCount;
  const mean = (key: 'jitterBufferDelay' | 'jitterBufferTargetDelay' | 'jitterBufferMinimumDelay') => (emitted > 0 ? ((last[key] - before[key]) * 1000) / emitted : undefined);
  return {
    received: firstArrival(samples[samples.indexOf(first) - 1]!, first),
    jitterBuffer: { jitterBufferMs: mean('jitterBufferDelay'), jitterBufferTargetMs: mean('jitterBufferTargetDelay'), jitterBufferMinimumMs: mean('jitterBufferMinimumDelay') },
  };
}

/** The whole WebRTC call's receiver and sender counters, first sample to last (the getStats breakdown in BENCHMARKS.md). */
function callRtcSummary(samples: RtcSample[]): string {
  const first = samples.find((s) => s.jitterBufferEmittedCount > 0);
  const last = samples.at(-1);
  if (!first || !last) return 'no getStats samples';
  const d = (key: keyof RtcSample) => (last[key] ?? 0) - (first[key] ?? 0);
  const emitted = d('jitterBufferEmittedCount');
  const perEmitted = (key: keyof RtcSample) => fmt((d(key) * 1000) / emitted, 1);
  const sendDelay = d('packetsSent') > 0 ? fmt((d('totalPacketSendDelay') * 1000) / d('packetsSent'), 1) : '-';
  return [
    `receiver over the call: jitter buffer delay ${perEmitted('jitterBufferDelay')} ms, target ${perEmitted('jitterBufferTargetDelay')} ms, minimum ${perEmitted('jitterBufferMinimumDelay')} ms, processing ${perEmitted('totalProcessingDelay')} ms (per emitted sample);`,
    `${d('packetsReceived')} packets received, ${d('packetsDiscarded')} discarded; ${d('concealmentEvents')} concealment events, ${fmt(d('concealedSamples') / 48, 0)} ms concealed (${fmt(d('silentConcealedSamples') / 48, 0)} ms of it silent);`,
    `${fmt(d('insertedSamplesForDeceleration') / 48, 0)} ms inserted to slow down, ${fmt(d('removedSamplesForAcceleration') / 48, 0)} ms removed to speed up;`,
    `sender: ${d('packetsSent')} packets, ${sendDelay} ms in the send pacer each;`,
    `audio device (media-playout): ${d('playoutSamples') > 0 ? fmt((d('playoutDelay') * 1000) / d('playoutSamples'), 1) : '-'} ms playout delay per sample played, ${fmt(d('playoutSynthesized') * 1000, 0)} ms synthesized.`,
  ].join(' ');
}

function stats(values: number[]): { p50: number; p90: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), n: sorted.length };
}

const readTimeline = (page: Page) => page.evaluate(() => (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline);

export interface CallMeasure {
  transport: 'websocket' | 'webrtc';
  callId: string;
  /** The machine's and the server's CPU over the call (serverTurnBreakdown). */
  cpu?: CpuShare;
  turns: Turn[];
  timeline: PageTimeline;
  e2e: number[];
  /** The caller's RTP as the server received it (the call's `media`; null over the WebSocket): interarrival jitter and packets lost. */
  callerRtp?: { jitterMs: number | null; lost: number | null };
}

/** One call through /demo on a fresh page, until `wanted` caller turns were answered. */
async function measureCall(
  browser: Awaited<ReturnType<typeof launchBrowser>>,
  web: Awaited<ReturnType<typeof startWebServer>>,
  o: { agentId: string; transport: 'websocket' | 'webrtc'; wanted: number; turnMs: number; speaker: Speaker | null; log: (line: string) => void },
): Promise<CallMeasure> {
  const page = await browser.newPage();
  try {
    await page.addInitScript(instrumentPage, { worklets: WORKLETS, websocket: o.transport === 'websocket', statsEveryMs: STATS_EVERY_MS });
    await page.goto(`${web.baseUrl}/demo`);
    await page.waitForSelector(`#agent option[value="${o.agentId}"]`, { state: 'attached' });
    await page.selectOption('#agent', o.agentId);
    await page.click('#start');
    await page.waitForSelector('#status[data-phase="in_call"]', { timeout: 15_000 });
    const callId = (await page.textContent('#status code')) ?? '';
    o.log(`browser bench: ${o.transport} call ${callId}, waiting for ${o.wanted} answered turns`);
    const deadline = Date.now() + o.wanted * o.turnMs * 2 + 30_000;
    for (;;) {
      const timeline = await readTimeline(page);
      const answered = turnsOf(timeline).filter((t) => t.heard !== undefined).length;
      if (answered >= o.wanted) break;
      const seen = `${timeline.sent.filter(([, rms]) => rms >= SPEECH_RMS).length} voiced microphone frames, ${timeline.heard.length} reply starts heard (${timeline.heardDirect.length} in the SDK's context), ${timeline.rtc.length} getStats samples`;
      if (Date.now() > deadline) {
        // A loaded machine: report what was answered (the table's n says how many) rather than nothing.
        o.log(`browser bench: ${o.transport}: only ${answered} of ${o.wanted} turns answered in time (${seen}); hanging up`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    // Hang up once the last reply has played out, so the server has recorded its latency too.
    await page.waitForFunction(() => {
      const heard = (window as unknown as { latencyTimeline: PageTimeline }).latencyTimeline.heard;
      return performance.now() - (heard.at(-1) ?? 0) > 1500;
    });
    // The call may have ended already (the server ends it on a fault): then there is nothing to hang up.
    if (await page.$('#hangup')) await page.click('#hangup');
    await page.waitForSelector('#finished:not([data-status=""])', { timeout: 30_000 });
    const status = await page.getAttribute('#finished', 'data-status');
    if (status !== 'ended') o.log(`browser bench: the ${o.transport} call finished ${String(status)}`);
    const timeline = await readTimeline(page);
    const call = await web.api('GET', `/v2/get-call/${callId}`);
    if (process.env.BROWSER_BENCH_DUMP) fs.writeFileSync(`${process.env.BROWSER_BENCH_DUMP}-${o.transport}.json`, JSON.stringify({ timeline, call: call.json }));
    if (call.status !== 200) throw new Error(`get-call: ${call.status}`);
    const carried = (call.json.media as { transport?: string } | null)?.transport;
    if (carried !== o.transport) throw new Error(`the ${o.transport} call was carried by ${String(carried)}`);
    const atSpeaker = o.speaker ? o.speaker.onsets(ONSET_LEVEL, 200).map((at) => at - timeline.timeOrigin) : [];
    const media = call.json.media as { jitter_ms?: number | null; packets_lost?: number | null } | null;
    return {
      transport: o.transport,
      callId,
      turns: turnsOf(timeline, atSpeaker),
      timeline,
      e2e: (call.json.latency?.e2e?.values as number[] | undefined) ?? [],
      callerRtp: { jitterMs: media?.jitter_ms ?? null, lost: media?.packets_lost ?? null },
    };
  } finally {
    await page.close();
  }
}

/**
 * The arrival of the first of the packets a getStats sample counts beyond the one before: its last
 * packet's arrival less 20 ms for each packet after the two the server sends at once, but never
 * before the previous sample was taken (every packet it counts arrived after that). Under load the
 * server sends a late reply's frames in a burst, which the 20 ms spacing alone put up to 200 ms early.
 */
function firstArrival(before: RtcSample, sample: RtcSample): number {
  return Math.max(before.at, sample.lastPacketAt - 20 * Math.max(0, sample.packetsReceived - before.packetsReceived - 2));
}

/** CPU over one call: the machine's cores busy (every process: the browser, the server, anyone else) and the server process's, in cores. */
export interface CpuShare {
  machineCores: number;
  serverCores: number;
}

/** The machine's busy and total jiffies (/proc/stat), the server's (utime + stime, its recogniser's worker threads included), and the time. */
export function cpuSnapshot(pid: number | undefined): { busy: number; total: number; server: number; atMs: number } {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  const total = fields.reduce((a, b) => a + b, 0);
  let server = 0;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    server = Number(stat[11]) + Number(stat[12]);
  } catch {
    // Not on Linux, or the server is gone: its share reads 0.
  }
  return { busy: total - idle, total, server, atMs: performance.now() };
}

export function cpuSince(before: ReturnType<typeof cpuSnapshot>, pid: number | undefined): CpuShare {
  const after = cpuSnapshot(pid);
  const cores = os.cpus().length;
  const ticks = ((after.atMs - before.atMs) / 1000) * 100; // USER_HZ
  return { machineCores: ((after.busy - before.busy) / Math.max(1, after.total - before.total)) * cores, serverCores: (after.server - before.server) / Math.max(1, ticks) };
}

/** One reply's `turn timing` as the server logs it at debug level (src/voice/turn-trace.ts, TurnTrace). */
interface ServerTurn {
  queuedMs: number;
  endOfTurnMs: number;
  endOfTurn?: { silenceMs: number; reason: string; pendingMs: number | null; interim: string };
  finalMs: number;
  engineMs: number;
  firstTextMs: number | null;
  firstAudioMs: number | null;
  e2eMs: number;
}

/**
 * The server's own share, per stage, both transports (issue 23: where the WebRTC's extra e2e goes):
 * each reply's `turn timing` from the server's log, ms after the caller's last voiced frame, as
 * p50 per transport, then each turn on one line.
 */
export function serverTurnBreakdown(lines: readonly string[], measures: readonly Pick<CallMeasure, 'transport' | 'callId' | 'cpu'>[]): string[] {
  const turnsOfCall = (callId: string): ServerTurn[] =>
    lines.flatMap((line) => {
      if (!line.includes('"turn timing"') || !line.includes(callId)) return [];
      const entry = JSON.parse(line) as { callId?: string; turn?: ServerTurn };
      return entry.callId === callId && entry.turn ? [entry.turn] : [];
    });
  const stages: [string, (t: ServerTurn) => number | null | undefined][] = [
    ['queued before the VAD', (t) => t.queuedMs],
    ['end of turn decided', (t) => t.endOfTurnMs],
    ['silence asked for', (t) => t.endOfTurn?.silenceMs],
    ['recogniser pending at the decision', (t) => t.endOfTurn?.pendingMs],
    ['recogniser final', (t) => t.finalMs],
    ['engine asked', (t) => t.engineMs],
    ['engine first text', (t) => t.firstTextMs],
    ['synthesis first audio', (t) => t.firstAudioMs],
    ['first agent frame sent (e2e)', (t) => t.e2eMs],
  ];
  const byCall = measures.map((m) => ({ transport: m.transport, turns: turnsOfCall(m.callId) }));
  const p50Of = (turns: ServerTurn[], get: (t: ServerTurn) => number | null | undefined) => {
    const values = turns.flatMap((t) => {
      const v = get(t);
      return v === null || v === undefined ? [] : [v];
    });
    return values.length > 0 ? fmt(stats(values).p50, 0) : '-';
  };
  const out = [
    `Server, per reply (ms after the caller's last voiced frame, p50; turns: ${byCall.map((c) => `${c.transport} ${c.turns.length}`).join(', ')}):`,
    '',
    `| stage | ${byCall.map((c) => c.transport).join(' | ')} |`,
    `|---|${byCall.map(() => '---').join('|')}|`,
    ...stages.map(([name, get]) => `| ${name} | ${byCall.map((c) => p50Of(c.turns, get)).join(' | ')} |`),
    `| end of turn: why (complete / incomplete / unknown / unsettled) | ${byCall.map((c) => ['complete', 'incomplete', 'unknown', 'unsettled'].map((r) => c.turns.filter((t) => t.endOfTurn?.reason === r).length).join(' / ')).join(' | ')} |`,
    `| CPU over the call, cores: machine / server | ${measures.map((m) => (m.cpu ? `${fmt(m.cpu.machineCores, 2)} / ${fmt(m.cpu.serverCores, 2)}` : '-')).join(' | ')} |`,
    '',
  ];
  for (const c of byCall) {
    for (const [i, t] of c.turns.entries()) {
      const why = t.endOfTurn ? `${t.endOfTurn.silenceMs} ms asked (${t.endOfTurn.reason}, recogniser pending ${t.endOfTurn.pendingMs ?? '?'} ms, "${t.endOfTurn.interim}")` : 'fixed';
      out.push(`- ${c.transport} ${i + 1}: queued ${t.queuedMs}, end of turn +${t.endOfTurnMs} (${why}), final +${t.finalMs}, engine +${t.engineMs}, text +${t.firstTextMs ?? '-'}, audio +${t.firstAudioMs ?? '-'}, first frame +${t.e2eMs}`);
    }
  }
  return out;
}

/** Reply starts at the page: the first packet or message after at least 500 ms without any. */
function replyArrivals(timeline: PageTimeline): number[] {
  if (timeline.rtc.length > 0) {
    const starts: number[] = [];
    let lastGrowth = -Infinity;
    for (let i = 1; i < timeline.rtc.length; i++) {
      const [before, now] = [timeline.rtc[i - 1]!, timeline.rtc[i]!];
      const grew = (now.packetsReceived ?? 0) - (before.packetsReceived ?? 0);
      if (grew <= 0) continue;
      if (now.at - lastGrowth > 500) starts.push(firstArrival(before, now));
      lastGrowth = now.at;
    }
    return starts;
  }
  return timeline.received.filter((at, i) => i === 0 || at - timeline.received[i - 1]! > 500);
}

/**
 * The browser's share alone, without a recogniser (so a loaded machine cannot end the call
 * `error_asr`): an agent on a custom LLM served here that answers every reminder (REMINDER_MS of the
 * caller's silence; the microphone plays silence), so the agent speaks `replies` times with pauses
 * between, as between the turns of a conversation. Per reply: its first packet or message at the
 * page -> its first sample heard, tapped as in the main part.
 */
async function measurePlayout(
  browser: Awaited<ReturnType<typeof launchBrowser>>,
  web: Awaited<ReturnType<typeof startWebServer>>,
  o: { agentId: string; transport: 'websocket' | 'webrtc'; replies: number; speaker: Speaker | null; log: (line: string) => void },
): Promise<{ transport: string; toEar: number[]; toSpeaker: number[]; jitterBuffer: string; direct: number[] }> {
  const page = await browser.newPage();
  try {
    await page.addInitScript(instrumentPage, { worklets: WORKLETS, websocket: o.transport === 'websocket', statsEveryMs: STATS_EVERY_MS });
    await page.goto(`${web.baseUrl}/demo`);
    await page.waitForSelector(`#agent option[value="${o.agentId}"]`, { state: 'attached' });
    await page.selectOption('#agent', o.agentId);
    await page.click('#start');
    await page.waitForSelector('#status[data-phase="in_call"]', { timeout: 15_000 });
    o.log(`browser bench (playout): ${o.transport} call, waiting for ${o.replies} replies`);
    const deadline = Date.now() + o.replies * (REMINDER_MS + 2_000) + 20_000;
    while ((await readTimeline(page)).heard.length < o.replies && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    if (await page.$('#hangup')) await page.click('#hangup');
    const timeline = await readTimeline(page);
    const pair = (heard: number[]) => replyArrivals(timeline).flatMap((at) => {
      const h = heard.find((t) => t > at - 5 && t < at + 1_000);
      return h === undefined ? [] : [h - at];
    });
    const atSpeaker = o.speaker ? o.speaker.onsets(ONSET_LEVEL, 200).map((at) => at - timeline.timeOrigin) : [];
    if (process.env.BROWSER_BENCH_DUMP) fs.writeFileSync(`${process.env.BROWSER_BENCH_DUMP}-playout-${o.transport}.json`, JSON.stringify({ timeline, atSpeaker, arrivals: replyArrivals(timeline) }));
    return { transport: o.transport, toEar: pair(timeline.heard), toSpeaker: pair(atSpeaker), direct: pair(timeline.heardDirect), jitterBuffer: timeline.rtc.length > 0 ? callRtcSummary(timeline.rtc) : '' };
  } finally {
    await page.close();
  }
}

/**
 * The caller's silence before each reminder, ms: the replies are then 2.5 s and more apart, as the
 * main part's are (its caller's phrases and 3.5 s gaps between them) and a conversation's mostly
 * are. A pause over 2.25 s is one after which the WebRTC endpoint's timestamps let the reply play on
 * arrival (src/media/webrtc/rtp-send-clock.ts); 1 s (the first version) measured shorter ones.
 */
const REMINDER_MS = 2_500;

/** `npm run bench -- browser-playout`: received -> heard per reply over both transports in one run, no recogniser. */
export async function runBrowserPlayoutBench(options: { replies?: number; log?: (line: string) => void } = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const header = ['| date | machine | load average (1/5/15 min) | transport | replies (tap / speaker) | received to heard p50 / p90, tap (ms) | received to heard p50 / p90, at the speaker (ms) |', '|---|---|---|---|---|---|---|'];
  if (NO_CHROMIUM) return [...header, `| skipped: ${NO_CHROMIUM} | | | | | | |`].join('\n');
  const replies = options.replies ?? 12;
  await buildWeb();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-playout-'));
  const web = await startWebServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  const llm = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  let speaker: Speaker | null = null;
  try {
    await new Promise((resolve) => llm.once('listening', resolve));
    // Retell's LLM WebSocket protocol (docs/custom-llm.md): a greeting, then an answer to each reminder.
    llm.on('connection', (ws) => {
      const say = (id: number, content: string) => ws.send(JSON.stringify({ response_type: 'response', response_id: id, content, content_complete: true }));
      say(0, 'Hello.');
      ws.on('message', (data) => {
        const event = JSON.parse(wsDataToBuffer(data).toString('utf8')) as { interaction_type?: string; response_id?: number };
        if (event.interaction_type === 'reminder_required' || event.interaction_type === 'response_required') say(event.response_id ?? 0, 'Okay.');
      });
    });
    const url = `ws://127.0.0.1:${(llm.address() as AddressInfo).port}/llm-websocket`;
    const agent = await web.api('POST', '/create-agent', { agent_name: 'Playout', response_engine: { type: 'custom_llm', llm_websocket_url: url }, reminder_trigger_ms: REMINDER_MS, reminder_max_count: 20 });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
    const wav = path.join(dir, 'silence.wav');
    fs.writeFileSync(wav, silentWav(10_000));
    if (NO_PULSEAUDIO) log(`browser bench (playout): ${NO_PULSEAUDIO}`);
    else speaker = await startSpeaker();
    browser = await launchBrowser({ microphoneWav: wav, ...(speaker ? { audioEnv: speaker.env } : {}) });
    const rows: string[] = [];
    const notes: string[] = [];
    const p50 = new Map<string, number>();
    const p50Speaker = new Map<string, number>();
    for (const transport of ['websocket', 'webrtc'] as const) {
      const m = await measurePlayout(browser, web, { agentId: agent.json.agent_id as string, transport, replies, speaker, log });
      const s = stats(m.toEar);
      const atSpeaker = stats(m.toSpeaker);
      p50.set(transport, s.p50);
      p50Speaker.set(transport, atSpeaker.p50);
      rows.push(`| ${new Date().toISOString().slice(0, 10)} | ${machine()} | ${os.loadavg().map((n) => n.toFixed(2)).join(' / ')} | ${transport} | ${s.n} / ${atSpeaker.n} | ${fmt(s.p50, 0)} / ${fmt(s.p90, 0)} | ${atSpeaker.n > 0 ? `${fmt(atSpeaker.p50, 0)} / ${fmt(atSpeaker.p90, 0)}` : '-'} |`);
      const direct = stats(m.direct);
      if (direct.n > 0) notes.push(`WebSocket tapped in the SDK's own context: ${fmt(direct.p50, 0)} / ${fmt(direct.p90, 0)} ms.`);
      if (m.jitterBuffer) notes.push(`WebRTC getStats, ${m.jitterBuffer}`);
    }
    const minus = (m: Map<string, number>) => fmt((m.get('webrtc') ?? NaN) - (m.get('websocket') ?? NaN), 0);
    return [...header, ...rows, '', ...notes, '', `Received to heard p50, WebRTC minus WebSocket: ${minus(p50)} ms by the tap, ${speaker ? `${minus(p50Speaker)} ms at the speaker` : `not measured at the speaker (${String(NO_PULSEAUDIO)})`}.`].join('\n');
  } finally {
    await browser?.close();
    await closeSpeaker(speaker);
    await web.close();
    llm.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Stops the speaker's recording; with BROWSER_BENCH_DUMP=prefix, writes it to `prefix-speaker-<start, epoch ms>-<rate>.pcm` first (mono PCM16). */
async function closeSpeaker(speaker: Speaker | null): Promise<void> {
  if (!speaker) return;
  if (process.env.BROWSER_BENCH_DUMP) {
    const { start, rate, pcm } = speaker.recording();
    fs.writeFileSync(`${process.env.BROWSER_BENCH_DUMP}-speaker-${start.toFixed(1)}-${rate}.pcm`, pcm);
  }
  await speaker.close();
}

/** A mono 16-bit 16 kHz WAV of silence, `ms` long (Chromium loops it as the microphone). */
function silentWav(ms: number): Buffer {
  const data = Math.round(16 * ms) * 2;
  const wav = Buffer.alloc(44 + data);
  wav.write('RIFF', 0);
  wav.writeUInt32LE(36 + data, 4);
  wav.write('WAVEfmt ', 8);
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(16_000, 24);
  wav.writeUInt32LE(32_000, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36);
  wav.writeUInt32LE(data, 40);
  return wav;
}

export async function runBrowserBench(options: BrowserBenchOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const header = [
    '| date | machine | load average (1/5/15 min) | transport | turns (client / server) | client-seen p50 / p90 (ms) | client-seen at the speaker p50 / p90 (ms) | received p50 / p90 (ms) | received to heard p50 (ms) | server e2e p50 / p90 (ms) | jitter buffer p50: delay / target / minimum (ms) | client-seen p50 < 700 ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const missing = NO_CHROMIUM || (hasPocketsphinx() ? false : NO_POCKETSPHINX);
  if (missing) return [...header, `| skipped: ${missing} | | | | | | | | | | | |`].join('\n');

  const wanted = options.turns ?? 20;
  log('browser bench: building the web bundles');
  await buildWeb();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-browser-'));
  // At debug level the server logs each reply's `turn timing` (src/voice/turn-trace.ts): serverTurnBreakdown.
  const web = await startWebServer({ LOG_LEVEL: 'debug' });
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  let speaker: Speaker | null = null;
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
    if (NO_PULSEAUDIO) log(`browser bench: ${NO_PULSEAUDIO}`);
    else speaker = await startSpeaker();
    browser = await launchBrowser({ microphoneWav: wav, ...(speaker ? { audioEnv: speaker.env } : {}) });
    log(`browser bench: the caller's file is ${fmt(wavMs / 1000, 0)} s, looped`);
    const measures: CallMeasure[] = [];
    for (const transport of ['websocket', 'webrtc'] as const) {
      const cpu = cpuSnapshot(web.server.child.pid);
      measures.push(await measureCall(browser, web, { agentId, transport, wanted, turnMs: wavMs / phrases.length, speaker, log }));
      measures.at(-1)!.cpu = cpuSince(cpu, web.server.child.pid);
    }
    if (browser.errors.length > 0) log(`browser bench: page errors: ${browser.errors.join('; ')}`);

    const load = os.loadavg().map((n) => n.toFixed(2)).join(' / ');
    const date = new Date().toISOString().slice(0, 10);
    const rows: string[] = [];
    const notes: string[] = [];
    const p50 = new Map<string, number>();
    const p50Speaker = new Map<string, number>();
    for (const m of measures) {
      const answered = m.turns.filter((t) => t.heard !== undefined);
      const heard = stats(answered.map((t) => t.heard! - t.endOfSpeech));
      const received = stats(answered.flatMap((t) => (t.received === undefined ? [] : [t.received - t.endOfSpeech])));
      const toEar = stats(answered.flatMap((t) => (t.received === undefined ? [] : [t.heard! - t.received])));
      const direct = stats(answered.flatMap((t) => (t.heardDirect === undefined ? [] : [t.heardDirect - t.endOfSpeech])));
      const atSpeaker = stats(m.turns.flatMap((t) => (t.heardSpeaker === undefined ? [] : [t.heardSpeaker - t.endOfSpeech])));
      const jitter = (key: 'jitterBufferMs' | 'jitterBufferTargetMs' | 'jitterBufferMinimumMs') => stats(answered.flatMap((t) => (t[key] === undefined ? [] : [t[key]]))).p50;
      const e2e = stats(m.e2e);
      p50.set(m.transport, heard.p50);
      p50Speaker.set(m.transport, atSpeaker.p50);
      const pair = (s: { p50: number; p90: number; n: number }) => (s.n > 0 ? `${fmt(s.p50, 0)} / ${fmt(s.p90, 0)}` : '-');
      rows.push(
        `| ${date} | ${machine()} | ${load} | ${m.transport} | ${heard.n} / ${e2e.n} | ${pair(heard)} | ${speaker ? `${pair(atSpeaker)} (${atSpeaker.n})` : '-'} | ${pair(received)} | ${toEar.n > 0 ? fmt(toEar.p50, 0) : '-'} | ${pair(e2e)} | ${m.transport === 'webrtc' ? `${fmt(jitter('jitterBufferMs'), 0)} / ${fmt(jitter('jitterBufferTargetMs'), 0)} / ${fmt(jitter('jitterBufferMinimumMs'), 0)}` : '-'} | ${heard.p50 < TARGET_MS ? 'yes' : 'no'} |`,
      );
      notes.push(`${m.transport}: ${m.turns.length} utterances sent, ${answered.length} answered; the tap context reports an output latency of ${fmt(m.timeline.outputLatencyMs, 0)} ms (base ${fmt(m.timeline.baseLatencyMs, 0)} ms).`);
      if (direct.n > 0) notes.push(`Tapped in the SDK's own AudioContext instead (the old tap), the WebSocket's client-seen p50 is ${fmt(direct.p50, 0)} ms: the stream tap adds ${fmt(heard.p50 - direct.p50, 0)} ms, as it does to WebRTC's <audio> stream.`);
      if (m.transport === 'webrtc') notes.push(`WebRTC getStats, ${callRtcSummary(m.timeline.rtc)}`);
      if (m.transport === 'webrtc' && m.callerRtp) notes.push(`The caller's RTP at the server (the call's media): jitter ${fmt(m.callerRtp.jitterMs ?? NaN, 1)} ms, ${m.callerRtp.lost ?? '?'} packets lost.`);
    }
    const difference = (p50.get('webrtc') ?? NaN) - (p50.get('websocket') ?? NaN);
    const atSpeaker = (p50Speaker.get('webrtc') ?? NaN) - (p50Speaker.get('websocket') ?? NaN);
    return [
      ...header,
      ...rows,
      '',
      `Caller: ${phrases.length} phrases in ${options.callerVoiceId ?? 'flite-rms'}, ${PHRASE_GAP_MS / 1000} s apart. ${notes.join(' ')}`,
      '',
      `Client-seen p50, WebRTC minus WebSocket, same run: ${fmt(difference, 0)} ms by the tap (target: no more than 30 ms: ${difference <= 30 ? 'met' : 'not met'}).`,
      speaker
        ? `At the speaker (what a person hears, the target's measure): ${fmt(atSpeaker, 0)} ms (${atSpeaker <= 30 ? 'met' : 'not met'}).`
        : `Not measured at the speaker: ${String(NO_PULSEAUDIO)}.`,
      '',
      ...serverTurnBreakdown(web.server.lines, measures),
    ].join('\n');
  } finally {
    await browser?.close();
    await closeSpeaker(speaker);
    await web.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// `node bench/browser.ts [turns]`: a smaller run than the default 20 turns a transport.
if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${await runBrowserBench(Number(process.argv[2]) > 0 ? { turns: Number(process.argv[2]) } : {})}\n`);
