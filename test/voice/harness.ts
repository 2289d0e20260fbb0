// Shared helpers for voice tests: a lock-step clock, audio builders, and a pipeline driver.
import { VoicePipeline, type VoicePipelineOptions } from '../../src/voice/pipeline.ts';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import { FRAME_SAMPLES } from '../../src/voice/frames.ts';
import type { Utterance } from '../../src/voice/transcript.ts';
import type { SttOpenOptions, SttProvider, SttStream } from '../../src/providers/stt.ts';
import { concatPcm } from '../../src/lib/pcm.ts';
import type { EngineOutput } from '../../src/voice/engines/types.ts';

/** A clock moved by hand, in ms: the pipeline's scheduler, its timers run as time is advanced. */
export class TestClock extends ManualScheduler {
  constructor() {
    super(1_000);
  }
  /** The time now, ms. */
  get t(): number {
    return this.now();
  }
  override now = (): number => super.now();
}

/** `ms` of silence (or faint noise, to keep VADs honest). */
export function silence(ms: number, noise = 0): Int16Array {
  const n = Math.round((ms * 16000) / 1000);
  const out = new Int16Array(n);
  if (noise) for (let i = 0; i < n; i++) out[i] = Math.round((Math.random() * 2 - 1) * noise);
  return out;
}

/** A loud 300 Hz tone: "speech" for the energy VAD. */
export function tone(ms: number, amplitude = 8000): Int16Array {
  const n = Math.round((ms * 16000) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 16000));
  return out;
}

export function concat(...parts: Int16Array[]): Int16Array {
  return concatPcm(parts);
}

/** Collects a pipeline's events. */
export class Recorder {
  agentFrames: Array<{ atMs: number }> = [];
  events: Array<{ type: string; atMs: number; data?: unknown }> = [];
  transcript: readonly Utterance[] = [];
  hangup: { reason: string } | undefined;
  errors: Array<{ reason: string; message: string }> = [];

  constructor(p: VoicePipeline, clock: { now(): number }) {
    p.on('agent_audio', () => this.agentFrames.push({ atMs: clock.now() }));
    p.on('agent_start_talking', () => this.events.push({ type: 'agent_start_talking', atMs: clock.now() }));
    p.on('agent_stop_talking', (d) => this.events.push({ type: 'agent_stop_talking', atMs: clock.now(), data: d }));
    p.on('user_start_talking', () => this.events.push({ type: 'user_start_talking', atMs: clock.now() }));
    p.on('transcript_update', (t) => (this.transcript = t));
    p.on('hangup', (h) => {
      this.hangup = h;
      this.events.push({ type: 'hangup', atMs: clock.now(), data: h });
    });
    p.on('error', (e) => this.errors.push(e));
  }
}

/** Lets queued promise callbacks (and worker/child-process I/O, with `ms` > 0) run. */
export function flush(ms = 0): Promise<void> {
  return new Promise((r) => (ms ? setTimeout(r, ms) : setImmediate(r)));
}

/**
 * Feeds audio in real-time lock-step: each 20 ms frame advances the clock by 20 ms, then lets
 * async work run. `realMsPerFrame` > 0 also waits that long in real time per frame (for engines
 * doing real work in other threads/processes); 0 only drains the microtask/immediate queues.
 */
export async function feed(p: VoicePipeline, clock: TestClock, pcm: Int16Array, realMsPerFrame = 0, onFrame?: (i: number) => void): Promise<void> {
  let i = 0;
  for (let o = 0; o < pcm.length; o += FRAME_SAMPLES, i++) {
    clock.advance(20);
    p.pushAudio(pcm.subarray(o, o + FRAME_SAMPLES));
    onFrame?.(i);
    await flush(realMsPerFrame);
    if (realMsPerFrame === 0) await flush();
  }
}

export function makePipeline(options: Omit<VoicePipelineOptions, 'scheduler' | 'timers'>, clock: TestClock): VoicePipeline {
  return new VoicePipeline({ ...options, scheduler: clock, timers: false });
}

/**
 * A streaming recogniser that "hears" the words of `text` in order, one per `msPerWord` of loud
 * audio (RMS over 1000, i.e. tone(), not silence): each voiced stretch reveals the next word as an
 * interim hypothesis, and finalize() returns the words heard in the utterance. Words not yet
 * heard wait for the next utterance, as a caller's sentence does across a turn cut at a pause.
 */
export class WordStt implements SttProvider {
  readonly id = 'words';
  readonly #words: string[];
  readonly #msPerWord: number;
  /** With a number: what its streams' pendingMs() answer (a recogniser that far behind). */
  readonly #pendingMs: number | undefined;
  constructor(text: string, msPerWord = 200, pendingMs?: number) {
    this.#words = text.split(/\s+/).filter(Boolean);
    this.#msPerWord = msPerWord;
    this.#pendingMs = pendingMs;
  }

  languages(): readonly string[] {
    return ['en-US'];
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    let voicedMs = 0;
    let heard: string[] = [];
    const pending = this.#pendingMs;
    return {
      ...(pending === undefined ? {} : { pendingMs: () => pending }),
      write: (pcm: Int16Array) => {
        let sum = 0;
        for (const s of pcm) sum += s * s;
        if (Math.sqrt(sum / Math.max(1, pcm.length)) < 1000) return;
        voicedMs += (pcm.length / 16000) * 1000;
        const due = Math.floor(voicedMs / this.#msPerWord + 1e-9);
        let grew = false;
        while (heard.length < due && this.#words.length > 0) {
          heard.push(this.#words.shift()!);
          grew = true;
        }
        if (grew) options.onInterim?.({ text: heard.join(' ') });
      },
      finalize: async () => {
        const text = heard.join(' ');
        heard = [];
        voicedMs = 0;
        return { text };
      },
      close: async () => {},
    };
  }
}

/** Engine output a test feeds piece by piece (`push`); `null` ends it, as content_complete does. */
export function streamed() {
  const queue: Array<EngineOutput | null> = [];
  let wake: (() => void) | undefined;
  async function* outputs(): AsyncIterable<EngineOutput> {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((r) => (wake = r));
      const next = queue.shift()!;
      if (next === null) return;
      yield next;
    }
  }
  const push = (item: EngineOutput | null) => {
    queue.push(item);
    wake?.();
  };
  return { outputs: outputs(), push };
}
