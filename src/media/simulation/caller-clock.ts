/**
 * The time of a simulated call in audio mode. The caller's side hands the session one 20 ms frame
 * per step (its script's audio, or silence, as a microphone does), and each step moves the call's
 * clock 20 ms on. Two clocks:
 *
 * - virtual (engines that are not bound to real time: PocketSphinx, Flite, the fakes): the call
 *   runs on a ManualScheduler, so the session's and the pipeline's timers (end of turn, playout
 *   pacing, reminders, silence, recognition deadlines) run on it. A step is taken as soon as the
 *   engines have kept up: while the recogniser is behind the audio fed, time waits for it; while an
 *   engine works on an answer (the recogniser's final pass, synthesis, the LLM, a mocked delay),
 *   time runs at real speed, so the latency a case measures still counts the engines' own time.
 *   Otherwise (the caller speaking, silences, waits, the agent's audio playing out) it jumps.
 * - real time (a recogniser that streams to a hosted service paces itself by the wall clock):
 *   a step is taken when real time says the frame is due.
 */
import { type Scheduler, ManualScheduler, realScheduler } from '../../lib/scheduler.ts';
import type { LlmProvider } from '../../providers/llm.ts';
import type { SttProvider, SttStream } from '../../providers/stt.ts';
import type { TtsProvider } from '../../providers/tts.ts';

/** One step of the caller's audio, ms. */
export const STEP_MS = 20;
/** Audio the recogniser may be behind before the virtual clock waits for it, ms. */
const MAX_RECOGNISER_BACKLOG_MS = 100;
/**
 * Longest a step waits for the recogniser to catch up, ms of real time: a recogniser that makes no
 * progress (stuck, or starved by the machine) lets time go on, and the pipeline's recognition
 * deadline judges it as it would in a real call.
 */
const MAX_CATCH_UP_MS = 5_000;
/** Recognisers whose streams decode what they are given whenever it comes (no wall-clock pacing of their own). */
const VIRTUAL_CLOCK_RECOGNISERS: ReadonlySet<string> = new Set(['pocketsphinx', 'fake']);

/** Whether a call on this recogniser can run on the virtual clock. */
export function runsOnVirtualClock(stt: Pick<SttProvider, 'id'>): boolean {
  return VIRTUAL_CLOCK_RECOGNISERS.has(stt.id);
}

/** What the engines of one simulated call are doing: answers being worked on, and the recogniser's backlog. */
export class EngineActivity {
  /** Requests an engine is working on (a `next()` of a stream, a final recognition). */
  busy = 0;
  readonly #streams = new Set<SttStream>();

  /** Audio written to the recogniser and not decoded yet, ms (the largest over its streams). */
  backlogMs(): number {
    let most = 0;
    for (const s of this.#streams) most = Math.max(most, s.pendingMs?.() ?? 0);
    return most;
  }

  /** Counts `work` as an engine's while it runs. */
  async during<T>(work: Promise<T>): Promise<T> {
    this.busy += 1;
    try {
      return await work;
    } finally {
      this.busy -= 1;
    }
  }

  /** An async iterable whose pending `next()` calls count as work. */
  iterate<T>(source: AsyncIterable<T>): AsyncIterable<T> {
    return {
      [Symbol.asyncIterator]: () => {
        const it = source[Symbol.asyncIterator]();
        return {
          next: () => this.during(it.next()),
          return: async (value?: unknown) => (it.return ? it.return(value) : { done: true as const, value: undefined }),
        };
      },
    };
  }

  /** The recogniser, its streams' final passes counted as work and their backlogs watched. */
  stt(provider: SttProvider): SttProvider {
    const openStream: SttProvider['openStream'] = async (options) => {
      const stream = await provider.openStream(options);
      this.#streams.add(stream);
      const tracked: SttStream = {
        write: (pcm) => stream.write(pcm),
        finalize: (signal) => this.during(stream.finalize(signal)),
        close: () => {
          this.#streams.delete(stream);
          return stream.close();
        },
        ...(stream.bias ? { bias: (phrases: readonly string[]) => stream.bias?.(phrases) } : {}),
        ...(stream.expect ? { expect: (e: Parameters<NonNullable<SttStream['expect']>>[0]) => stream.expect?.(e) } : {}),
        ...(stream.pendingMs ? { pendingMs: () => stream.pendingMs?.() ?? 0 } : {}),
      };
      return tracked;
    };
    return withMethods(provider, { openStream });
  }

  /** The synthesiser, each chunk it is asked for counted as work. */
  tts(provider: TtsProvider): TtsProvider {
    const synthesize: TtsProvider['synthesize'] = (text, options) => this.iterate(provider.synthesize(text, options));
    return withMethods(provider, { synthesize });
  }

  /** The LLM, each delta it is asked for counted as work. */
  llm(provider: LlmProvider): LlmProvider {
    const chat: LlmProvider['chat'] = (request) => this.iterate(provider.chat(request));
    return withMethods(provider, { chat });
  }
}

/** `target` with some of its methods replaced; the others still run on `target` (whose private fields they read). */
function withMethods<T extends object>(target: T, methods: Partial<T>): T {
  return new Proxy(target, {
    get(t, key) {
      if (Object.hasOwn(methods, key)) return methods[key as keyof T];
      const value: unknown = Reflect.get(t, key, t);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/** Paces the caller's steps. */
export interface CallerClock {
  /** 'virtual': the call's timers run on `scheduler`, moved by the steps; 'real_time': the wall clock's. */
  readonly kind: 'virtual' | 'real_time';
  readonly scheduler: Scheduler;
  /** Waits until the next step is due, then runs `push` (hands over one frame) and moves time STEP_MS on. */
  step(push: () => void): Promise<void>;
}

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The virtual clock of one call (see the file's header). */
export class VirtualCallerClock implements CallerClock {
  readonly kind = 'virtual';
  readonly scheduler = new ManualScheduler(0);
  readonly #activity: EngineActivity;
  /** Real time of the last step, ms (performance.now()). */
  #lastStep = performance.now();

  constructor(activity: EngineActivity) {
    this.#activity = activity;
  }

  async step(push: () => void): Promise<void> {
    // The recogniser is behind only because the audio came faster than real time: time waits for it.
    const giveUp = performance.now() + MAX_CATCH_UP_MS;
    while (this.#activity.backlogMs() > MAX_RECOGNISER_BACKLOG_MS && performance.now() < giveUp) await sleep(1);
    // An engine at work takes its real time: the step waits for it, up to a step's length.
    const due = this.#lastStep + STEP_MS;
    while (this.#activity.busy > 0 && performance.now() < due) await sleep(1);
    this.#lastStep = performance.now();
    push();
    this.scheduler.advance(STEP_MS);
    // What the frame and the timers set going (the pipeline's stages, worker messages) runs before the next.
    await immediate();
    await immediate();
  }
}

/** Real time: a step when the wall clock says its frame is due (late steps catch up, as a microphone's samples do). */
export class RealTimeCallerClock implements CallerClock {
  readonly kind = 'real_time';
  readonly scheduler = realScheduler;
  readonly #since = performance.now();
  #steps = 0;

  async step(push: () => void): Promise<void> {
    const wait = this.#since + this.#steps * STEP_MS - performance.now();
    if (wait > 0) await sleep(wait);
    this.#steps += 1;
    push();
  }
}
