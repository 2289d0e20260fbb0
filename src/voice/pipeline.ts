import type { SttProvider, SttStream } from '../providers/stt.ts';
import type { TtsProvider } from '../providers/tts.ts';
import type { VadProvider, VoiceActivityDetector } from '../providers/vad.ts';
import { ProviderError, isAbortError } from '../providers/errors.ts';
import { Channel } from './channel.ts';
import { FRAME_MS, Framer, bytesToSamples, type AudioFrame } from './frames.ts';
import { EngineError, type ResponseEngine } from './engines/types.ts';
import type { TimedToolCall, Utterance } from './transcript.ts';
import { ToolCallBudget, TranscriptBudget, UTTERANCE_MAX_CHARS, capText } from './record-bounds.ts';
import { mergePhrases } from './engines/expected.ts';
import { abortable } from './engines/functions.ts';
import { completeness, endOfTurnSilenceMs, type EndOfTurnSettings } from './end-of-turn.ts';
import { BandMeter } from '../providers/audio/band.ts';
import type { TurnLatency } from './latency.ts';
import { vadStage } from './stages/vad.stage.ts';
import { turnStage } from './stages/turn.stage.ts';
import { sttStage, type SettledTranscript } from './stages/stt.stage.ts';
import { sentenceStage } from './stages/engine.stage.ts';
import { ttsStage } from './stages/tts.stage.ts';

/** Why a call fails inside the pipeline: a provider (by kind), or an error nothing expected (a bug: `error_unknown`). */
export type FailureReason = 'error_asr' | 'error_llm' | 'error_tts' | 'error_unknown';
export type HangupReason = 'agent_hangup' | FailureReason;

/** Voiced user audio measured before the call's audio band is reported, ms. */
export const BAND_SAMPLE_MS = 2_000;

/**
 * Silence after the speech a streaming recogniser must have decoded before its interim hypothesis
 * is judged complete or not, ms (adaptive end of turn).
 */
export const HYPOTHESIS_SETTLE_MS = 250;

/**
 * Preemptive replies: silence after the user's speech before the agent prepares its reply to what
 * the recogniser has heard so far, ms. Well under the shortest end of turn (100 ms), so that the
 * reply is ready when the turn is confirmed.
 */
export const PREEMPT_AFTER_MS = 100;

/** Default of VoicePipelineOptions.recognitionTimeoutMs (and of STT_TIMEOUT_MS), ms. */
export const DEFAULT_RECOGNITION_TIMEOUT_MS = 5_000;

/** Events of a VoicePipeline; listeners are called synchronously, in order of registration. */
export interface PipelineEvents {
  /** One 20 ms frame (320 samples, 16 kHz mono) of agent speech, paced at real time plus `outputLeadMs`. */
  agent_audio: (pcm: Int16Array) => void;
  agent_start_talking: () => void;
  /** `interrupted`: the user barged in; a transport should drop any agent audio it still buffers. */
  agent_stop_talking: (info: { interrupted: boolean }) => void;
  user_start_talking: () => void;
  /** The whole transcript so far (a new array each time). */
  transcript_update: (transcript: readonly Utterance[]) => void;
  /**
   * An interim hypothesis of the user's utterance being spoken: the whole text heard so far, which
   * the next interim or the final transcript may revise. Only from streaming recognisers
   * (SttOpenOptions.onInterim); never emitted after the turn has ended.
   */
  user_interim: (info: { text: string }) => void;
  /**
   * Once per call, after BAND_SAMPLE_MS of the user's voiced audio: whether it carries energy above
   * 4 kHz ('wide') or went through an 8 kHz channel ('narrow': a phone line, a hands-free Bluetooth
   * headset), which the embedded recogniser hears badly (src/providers/audio/band.ts).
   */
  audio_band: (info: { band: 'wide' | 'narrow'; highFraction: number }) => void;
  /** The call should end now; emitted once. Errors are preceded by an `error` event. */
  hangup: (info: { reason: HangupReason }) => void;
  /** `message` is the failure's own; `cause` is the error itself (its `cause` chain may quote an upstream's answer: log it, never show it). */
  error: (info: { reason: FailureReason; message: string; cause: unknown }) => void;
  /** One record per agent reply that produced audio. */
  latency: (record: TurnLatency) => void;
  /** A function call's invocation or result, as the engine reported it (the call's record keeps them). */
  tool_call: (call: TimedToolCall) => void;
  /** Once per kind: the call's transcript or function-call records reached their bound (src/voice/record-bounds.ts). */
  record_bound: (info: { what: 'transcript' | 'tool_calls' }) => void;
}

export interface VoicePipelineOptions {
  stt: SttProvider;
  tts: TtsProvider;
  vad: VadProvider;
  engine: ResponseEngine;
  /** TTS voice; default the provider's default (flite-kal16). */
  voiceId?: string;
  /** The call's BCP-47 language, handed to the recogniser (SttOpenOptions.language); default the provider's. */
  language?: string;
  /**
   * 0..1, default 1. How readily the user's speech interrupts the agent: 1 needs 60 ms of speech,
   * 0.5 about 280 ms, 0 never interrupts.
   */
  interruptionSensitivity?: number;
  /** Who speaks first; default 'agent'. */
  startSpeaker?: 'agent' | 'user';
  /** With startSpeaker 'user': the agent begins after this much user silence, ms; default: never. */
  beginAfterUserSilenceMs?: number;
  /** Silence that ends the user's turn, ms; default 500. Ignored with `endOfTurn`. */
  endpointingMs?: number;
  /**
   * Adaptive end of turn (the agent's responsiveness and minimum / maximum end-of-turn silence):
   * the silence that ends the turn follows what the streaming recogniser has heard so far
   * (src/voice/end-of-turn.ts). Default: the fixed `endpointingMs`.
   */
  endOfTurn?: EndOfTurnSettings;
  /**
   * Words the recogniser should expect throughout the call (the agent's boosted_keywords). Before
   * each user turn the pipeline hands the recogniser these plus the engine's expectedPhrases()
   * (SttStream.bias; SttOpenOptions.keywords at the start).
   */
  boostedKeywords?: readonly string[];
  /**
   * Longest wait for a turn's transcript once the turn has ended, ms; default 5000. A recogniser
   * that has not answered by then fails the turn, and the call ends with `error_asr` as on any
   * recognition failure, instead of the agent falling silent (docs/voice-pipeline.md).
   */
  recognitionTimeoutMs?: number;
  /**
   * Preemptive replies (the agent's `preemptive_replies`): once the user has paused
   * PREEMPT_AFTER_MS after words that complete a sentence, the engine and synthesis start on the
   * interim transcript; the reply plays only if the turn then ends with that same text, and is
   * thrown away (the engine rolled back, its side effects never run) if the user goes on.
   * Needs a streaming recogniser and an engine with `checkpoint`. Default false.
   */
  preemptive?: boolean;
  /** WebRTC VAD aggressiveness 0..3; default 2. */
  vadAggressiveness?: 0 | 1 | 2 | 3;
  /** Frames below this RMS (0..32768) are never speech; default 150 (about -47 dBFS). */
  minSpeechRms?: number;
  /** Monotonic milliseconds; default performance.now. Tests inject a manual clock. */
  now?: () => number;
  /**
   * Run a 10 ms timer that paces agent audio; default true. With false, output is paced only
   * when pushAudio() is called (lock-step: tests and transports that feed audio continuously).
   */
  timers?: boolean;
  /** How far agent audio may run ahead of real time, ms; default 80. Bounds barge-in latency. */
  outputLeadMs?: number;
  /** Input frames queued before the oldest are dropped; default 50 (1 s). */
  inputQueueFrames?: number;
  /** Agent frames synthesized ahead of playback before synthesis waits; default 1500 (30 s). */
  outputQueueFrames?: number;
}

type Job =
  | { kind: 'begin' }
  | { kind: 'unprompted' }
  | {
      kind: 'turn';
      startMs: number;
      endMs: number;
      speechEndAt: number;
      transcript: Promise<SettledTranscript>;
      backchannel: boolean;
      /** The reply prepared during the turn's last pause, if any (preemptive replies). */
      speculation: Speculation | undefined;
    };

/** When a user turn ended (its last voiced frame) and when its final transcript came, on the pipeline clock. */
interface TurnTiming {
  speechEndAt: number;
  transcriptAt: number;
}

/** A reply prepared for a turn the user may not have finished (preemptive replies). */
interface Speculation {
  /** The interim transcript it answers. */
  text: string;
  ctrl: AbortController;
  /** The turn ended with this text: the reply may play. */
  confirm: (turn: TurnTiming) => void;
  /** The reply began to play. */
  opened: boolean;
  /** Settles once the reply has played, or was dropped and the engine rolled back. */
  done: Promise<void>;
}

/** A reply held back until its turn is confirmed (#runReply). */
interface Held {
  ctrl: AbortController;
  confirmed: Promise<TurnTiming>;
  onOpen: () => void;
}

interface OutFrame {
  pcm: Int16Array;
  sentence: number;
}

interface Reply {
  ctrl: AbortController;
  sentences: string[];
  /** The engine reported function calls during this reply: its utterance keeps its sentences' times. */
  hadToolCalls: boolean;
  /** Calls placed after audio that had not played yet, with when they really happened (see #runReply). */
  placed: Array<{ call: TimedToolCall; happenedMs: number }>;
  /** When the user cut the reply off, ms since the pipeline started. */
  cutAtMs: number | undefined;
  /** Frames queued per sentence / sent per sentence. */
  queued: number[];
  sent: number[];
  synthesisDone: boolean;
  cutOff: boolean;
  startedAt: number | undefined;
  startMs: number;
  drained: () => void;
  firstFrameSent: boolean;
}

/** Speech needed to interrupt the agent, ms, for a sensitivity in 0..1 (Infinity at 0). */
export function bargeInThresholdMs(sensitivity: number): number {
  const s = Math.min(1, Math.max(0, sensitivity));
  if (s === 0) return Number.POSITIVE_INFINITY;
  return Math.round((60 + (1 - s) * 440) / FRAME_MS) * FRAME_MS;
}

/**
 * The voice pipeline of one call, with no I/O of its own: feed it the user's audio (16 kHz,
 * 16-bit LE mono, any chunk size) with pushAudio(); it emits the agent's audio and the call's
 * events. Stages: VAD -> turn detection -> recognition -> response engine -> synthesis ->
 * paced output. Construct, register listeners, `await start()`, and `close()` when the call ends.
 */
export class VoicePipeline {
  readonly #o: Required<Pick<VoicePipelineOptions, 'interruptionSensitivity' | 'startSpeaker' | 'endpointingMs' | 'timers' | 'outputLeadMs'>> & VoicePipelineOptions;
  readonly #now: () => number;
  readonly #listeners: { [K in keyof PipelineEvents]?: Array<PipelineEvents[K]> } = {};
  readonly #ctrl = new AbortController();
  readonly #input: Channel<AudioFrame>;
  readonly #output: Channel<OutFrame>;
  readonly #jobs = new Channel<Job>({ capacity: 16, overflow: 'drop_oldest' });
  readonly #framer = new Framer();
  readonly #transcript: Utterance[] = [];
  readonly #toolCalls: TimedToolCall[] = [];
  readonly #toolBudget = new ToolCallBudget();
  readonly #transcriptBudget = new TranscriptBudget();
  readonly #latencies: TurnLatency[] = [];
  readonly #bargeInMs: number;
  /** Measures the first BAND_SAMPLE_MS of voiced user audio; undefined once reported. */
  #band: { meter: BandMeter; ms: number } | undefined = { meter: new BandMeter(), ms: 0 };
  #t0 = 0;
  #inputFrames = 0;
  #stt: SttStream | undefined;
  #vad: VoiceActivityDetector | undefined;
  #tasks: Promise<void>[] = [];
  /** Deadlines on the pipeline clock (recognition timeouts), checked on every tick. */
  readonly #deadlines = new Set<{ at: number; fire: () => void }>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #started = false;
  #ended = false;
  #closed = false;
  #begun = false;
  #userHasSpoken = false;
  #reply: Reply | undefined;
  #speaking = false;
  #talkStart = 0;
  #sentMs = 0;
  /** Clock time of the last voiced user frame processed. */
  #lastVoicedAt = 0;
  /** The open user segment started while the agent was busy and has not (yet) interrupted it. */
  #segmentOverAgent = false;
  #segmentInterrupted = false;
  /** The recogniser's latest interim hypothesis of the open user utterance ('' before any). */
  #interim = '';
  /** The respond loop is handling a job. */
  #busy = false;
  /** The reply being prepared during the user's pause, not yet handed to a turn. */
  #speculation: Speculation | undefined;
  /** Every speculation not settled yet (close() waits for their rollback). */
  readonly #speculations = new Set<Speculation>();
  /** Settles once every dropped speculation has rolled the engine back. */
  #rollback: Promise<void> = Promise.resolve();
  readonly #preemptions = { used: 0, dropped: 0 };
  #transcriptFullSaid = false;

  constructor(options: VoicePipelineOptions) {
    this.#o = {
      interruptionSensitivity: 1,
      startSpeaker: 'agent',
      endpointingMs: 500,
      timers: true,
      outputLeadMs: 80,
      ...options,
    };
    this.#now = options.now ?? (() => performance.now());
    this.#input = new Channel({ capacity: options.inputQueueFrames ?? 50, overflow: 'drop_oldest' });
    this.#output = new Channel({ capacity: options.outputQueueFrames ?? 1500, overflow: 'block' });
    this.#bargeInMs = bargeInThresholdMs(this.#o.interruptionSensitivity);
  }

  on<K extends keyof PipelineEvents>(event: K, listener: PipelineEvents[K]): this {
    const list = (this.#listeners[event] ??= []) as Array<PipelineEvents[K]>;
    list.push(listener);
    return this;
  }

  #emit<K extends keyof PipelineEvents>(event: K, ...args: Parameters<PipelineEvents[K]>): void {
    for (const l of (this.#listeners[event] ?? []) as Array<(...a: Parameters<PipelineEvents[K]>) => void>) l(...args);
  }

  /** Utterances so far (a copy). */
  transcript(): Utterance[] {
    return this.#transcript.map((u) => ({ ...u }));
  }

  /** Latency records so far (a copy). */
  /** The function calls so far (invocations and results), in the order they happened. */
  toolCalls(): TimedToolCall[] {
    return this.#toolCalls.map((c) => ({ ...c }));
  }

  latencies(): TurnLatency[] {
    return [...this.#latencies];
  }

  /** Preemptive replies so far: played (`used`) and thrown away (`dropped`). */
  preemptions(): { used: number; dropped: number } {
    return { ...this.#preemptions };
  }

  /** True once `hangup` has been emitted. */
  get ended(): boolean {
    return this.#ended;
  }

  /** ms since start() on the pipeline clock. */
  elapsedMs(): number {
    return this.#now() - this.#t0;
  }

  /**
   * Opens the recogniser and VAD and, with startSpeaker 'agent', starts the opening message.
   * Never throws: a missing engine ends the call with `error` + `hangup` events instead.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#t0 = this.#now();
    try {
      this.#vad = await this.#o.vad.create({ aggressiveness: this.#o.vadAggressiveness ?? 2 });
      this.#stt = await this.#o.stt.openStream({
        signal: this.#ctrl.signal,
        onInterim: ({ text }) => {
          this.#interim = text;
          this.#emit('user_interim', { text });
        },
        ...(this.#o.language ? { language: this.#o.language } : {}),
        keywords: this.#expectedPhrases(),
      });
    } catch (e) {
      this.#fail('error_asr', e);
      return;
    }
    if (this.#closed) return;
    this.#tasks.push(this.#listenLoop(this.#stt, this.#vad), this.#respondLoop());
    if (this.#o.timers) {
      this.#timer = setInterval(() => this.#tick(), 10);
      this.#timer.unref();
    }
    if (this.#o.startSpeaker === 'agent') this.#beginOnce();
  }

  /**
   * The engine has speech of its own to say (ResponseEngine.unprompted): it is spoken after the
   * reply in progress, if any, and the user can interrupt it like any reply.
   */
  speakUnprompted(): void {
    if (this.#ended || this.#closed || !this.#o.engine.unprompted) return;
    this.#begun = true;
    void this.#jobs.push({ kind: 'unprompted' });
  }

  /** Feeds user audio: 16 kHz 16-bit LE mono, any length. Drops the oldest audio when 1 s behind. */
  pushAudio(chunk: Int16Array | Uint8Array): void {
    if (this.#ended || this.#closed) return;
    const pcm = chunk instanceof Int16Array ? chunk : bytesToSamples(chunk);
    for (const f of this.#framer.push(pcm)) {
      void this.#input.push({ pcm: f, offsetMs: this.#inputFrames++ * FRAME_MS });
    }
    this.#tick();
  }

  /** Idempotent: stops every task and releases the call's recogniser stream and VAD. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#keepSpokenPart();
    if (this.#timer) clearInterval(this.#timer);
    this.#ctrl.abort();
    this.#reply?.ctrl.abort();
    for (const spec of this.#speculations) spec.ctrl.abort();
    this.#input.close();
    this.#jobs.close();
    this.#output.close();
    this.#output.clear();
    this.#reply?.drained();
    await Promise.allSettled(this.#tasks);
    // The engine's state is read once the call is over: the prepared replies are rolled back first.
    await Promise.allSettled([...this.#speculations].map((spec) => spec.done));
    await this.#stt?.close();
    this.#vad?.close();
  }

  /** Feeds voiced frames to the band meter until the call's band is known (then it costs nothing). */
  #measureBand(pcm: Int16Array): void {
    if (!this.#band) return;
    this.#band.meter.push(pcm);
    this.#band.ms += FRAME_MS;
    if (this.#band.ms < BAND_SAMPLE_MS) return;
    const { meter } = this.#band;
    this.#band = undefined;
    this.#emit('audio_band', { band: meter.narrowband() ? 'narrow' : 'wide', highFraction: meter.highFraction() });
  }

  /** The agent's boosted keywords and what the engine expects the user to say next. */
  #expectedPhrases(): string[] {
    return mergePhrases(this.#o.boostedKeywords ?? [], this.#o.engine.expectedPhrases?.() ?? []);
  }

  /** Hands the recogniser what the next user turn is expected to contain (after each engine step). */
  #updateBias(): void {
    this.#stt?.bias?.(this.#expectedPhrases());
  }

  #beginOnce(): void {
    if (this.#begun) return;
    this.#begun = true;
    void this.#jobs.push({ kind: 'begin' });
  }

  async #listenLoop(stt: SttStream, vad: VoiceActivityDetector): Promise<void> {
    const signal = this.#ctrl.signal;
    try {
      const eot = this.#o.endOfTurn;
      const turnOptions = eot ? { endOfTurnMs: (silenceMs: number) => this.#endOfTurnMs(eot, silenceMs, stt) } : { endpointingMs: this.#o.endpointingMs };
      const events = sttStage(turnStage(vadStage(this.#input, vad, signal, this.#o.minSpeechRms), turnOptions, signal), stt, signal, {
        provider: this.#o.stt.id,
        now: this.#now,
        timeoutMs: this.#o.recognitionTimeoutMs ?? DEFAULT_RECOGNITION_TIMEOUT_MS,
        after: (ms) => this.#after(ms),
      });
      for await (const ev of events) {
        if (this.#ended) return;
        switch (ev.type) {
          case 'silence':
            this.#maybeBeginAfterSilence(ev.frame.offsetMs + FRAME_MS);
            break;
          case 'speech_start':
            this.#dropSpeculation();
            this.#interim = '';
            this.#userHasSpoken = true;
            this.#segmentOverAgent = this.#reply !== undefined;
            this.#segmentInterrupted = false;
            this.#emit('user_start_talking');
            break;
          case 'speech':
            if (ev.frame.speech) {
              this.#lastVoicedAt = this.#now();
              this.#measureBand(ev.frame.pcm);
              this.#dropSpeculation(); // the user goes on
            } else if (ev.silenceMs >= PREEMPT_AFTER_MS) {
              this.#preempt();
            }
            if (this.#reply && ev.voicedMs >= this.#bargeInMs) {
              this.#interrupt();
              this.#segmentInterrupted = true;
            }
            break;
          case 'user_turn': {
            const backchannel = this.#segmentOverAgent && !this.#segmentInterrupted;
            // The turn has ended: what was prepared for it is its own now, whatever the user says next.
            const speculation = this.#speculation;
            this.#speculation = undefined;
            void this.#jobs.push({ kind: 'turn', startMs: ev.startMs, endMs: ev.endMs, speechEndAt: this.#lastVoicedAt, transcript: ev.transcript, backchannel, speculation });
            break;
          }
        }
      }
    } catch (e) {
      if (!signal.aborted) this.#fail('error_asr', e);
    }
  }

  /**
   * The silence that ends the user's turn now (adaptive end of turn): judged from the latest
   * interim hypothesis, but only once the recogniser has decoded HYPOTHESIS_SETTLE_MS of the
   * silence (SttStream.pendingMs): before that the hypothesis still misses the last word, which
   * the recogniser commits only after some silence ("i would like to order" for "...order a"),
   * and only the maximum silence ends the turn.
   */
  #endOfTurnMs(eot: EndOfTurnSettings, silenceMs: number, stt: SttStream): number {
    const pending = stt.pendingMs?.();
    // The frame being judged is not written to the recogniser yet: it is not in `pending`.
    const decodedSilenceMs = pending === undefined ? silenceMs : silenceMs - FRAME_MS - pending;
    if (pending !== undefined && decodedSilenceMs < HYPOTHESIS_SETTLE_MS) return Math.max(eot.minSilenceMs, eot.maxSilenceMs);
    return endOfTurnSilenceMs(completeness(this.#interim), eot);
  }

  #maybeBeginAfterSilence(audioMs: number): void {
    const after = this.#o.beginAfterUserSilenceMs;
    if (this.#begun || this.#userHasSpoken || after === undefined || this.#o.startSpeaker !== 'user') return;
    if (audioMs >= after) this.#beginOnce();
  }

  async #respondLoop(): Promise<void> {
    for await (const job of this.#jobs) {
      if (this.#ended || this.#closed) return;
      this.#busy = true;
      try {
        await this.#handle(job);
      } finally {
        this.#busy = false;
      }
    }
  }

  async #handle(job: Job): Promise<void> {
    if (job.kind === 'begin' || job.kind === 'unprompted') {
      await this.#rollback;
      await this.#runReply(undefined, undefined, job.kind === 'unprompted');
      this.#updateBias();
      return;
    }
    const settled = await job.transcript;
    const spec = job.speculation;
    // What a recogniser answers is bounded like any peer's text: no turn is longer than this.
    const text = settled.ok ? capText(settled.result.text.trim(), UTTERANCE_MAX_CHARS) : '';
    // The reply prepared in the turn's last pause plays only if the turn ended with the words it answers.
    const usable = spec !== undefined && text !== '' && !job.backchannel && sameWords(spec.text, text);
    if (spec && !usable) this.#drop(spec);
    if (this.#closed) return;
    if (!settled.ok) {
      if (isAbortError(settled.error)) return;
      this.#fail('error_asr', settled.error);
      return;
    }
    if (!text) return;
    this.#begun = true;
    await this.#rollback; // the engine is back where the turn began, if a prepared reply was dropped
    this.#addUtterance({ role: 'user', text, startMs: job.startMs, endMs: job.endMs });
    // Speech over the agent that did not interrupt it (too short for the sensitivity) is kept in
    // the transcript but not answered.
    if (job.backchannel) return;
    const turn = { speechEndAt: job.speechEndAt, transcriptAt: settled.atMs };
    if (spec && usable) {
      spec.confirm(turn);
      await spec.done;
      if (spec.opened) {
        this.#preemptions.used++;
        this.#updateBias();
        return;
      }
      // It failed before it could play (and rolled the engine back): the turn is answered as usual.
    }
    await this.#runReply(text, turn);
    this.#updateBias();
  }

  /**
   * Preemptive replies: the user has paused PREEMPT_AFTER_MS. When what the recogniser has heard
   * so far completes a sentence and the agent is idle, the reply to it is prepared (engine and
   * synthesis, held before its first audio and before any side effect) on a checkpoint of the
   * engine; a new hypothesis replaces it. The turn's end confirms or drops it (#handle).
   */
  #preempt(): void {
    const text = this.#interim.trim();
    if (this.#speculation && sameWords(this.#speculation.text, text)) return;
    this.#dropSpeculation();
    const engine = this.#o.engine;
    if (!this.#o.preemptive || !engine.checkpoint || this.#ended || this.#closed) return;
    if (!text || completeness(text) === 'incomplete') return;
    // Not while the agent speaks or has turns to answer, nor for speech over it that will not be answered.
    if (this.#reply || this.#busy || this.#jobs.size > 0 || (this.#segmentOverAgent && !this.#segmentInterrupted)) return;
    const ctrl = new AbortController();
    let confirm!: (turn: TurnTiming) => void;
    const confirmed = new Promise<TurnTiming>((resolve) => (confirm = resolve));
    const spec: Speculation = { text, ctrl, confirm, opened: false, done: Promise.resolve() };
    const after = this.#rollback;
    spec.done = (async () => {
      await after;
      if (ctrl.signal.aborted || this.#ended || this.#closed) return;
      const restore = engine.checkpoint!();
      try {
        await this.#runReply(text, undefined, false, { ctrl, confirmed, onOpen: () => (spec.opened = true) });
      } finally {
        if (!spec.opened) restore();
        this.#speculations.delete(spec);
      }
    })();
    this.#speculations.add(spec);
    this.#speculation = spec;
  }

  /** Drops the reply being prepared for the open turn, if any. */
  #dropSpeculation(): void {
    const spec = this.#speculation;
    this.#speculation = undefined;
    if (spec) this.#drop(spec);
  }

  /** Throws a prepared reply away; #rollback settles once the engine is rolled back. */
  #drop(spec: Speculation): void {
    spec.ctrl.abort();
    this.#preemptions.dropped++;
    this.#rollback = Promise.all([this.#rollback, spec.done]).then(() => undefined);
  }

  /**
   * Runs one reply: the engine's output, synthesized and queued for paced playback. A `held`
   * reply (preemptive) is prepared up to its first audio and waits there for its turn to be
   * confirmed; it becomes the current reply only then, and returns without a trace if dropped.
   */
  async #runReply(userText: string | undefined, turnTiming: TurnTiming | undefined, unprompted = false, held?: Held): Promise<void> {
    let turn = turnTiming;
    const ctrl = held?.ctrl ?? new AbortController();
    const signal = AbortSignal.any([ctrl.signal, this.#ctrl.signal]);
    let drained!: () => void;
    const drainedP = new Promise<void>((r) => (drained = r));
    const reply: Reply = {
      ctrl, sentences: [], hadToolCalls: false, placed: [], cutAtMs: undefined, queued: [], sent: [], synthesisDone: false, cutOff: false,
      startedAt: undefined, startMs: 0, drained, firstFrameSent: false,
    };
    if (!held) this.#reply = reply;
    let opened = !held;
    const engineStart = this.#now();
    const marks: { firstText?: number; synthStart?: number; firstAudio?: number } = {};
    const open = async (): Promise<void> => {
      if (opened || !held) return;
      turn = await abortable(held.confirmed, signal);
      opened = true;
      held.onOpen();
      this.#reply = reply;
    };
    let hangup = false;
    let functionMs = 0;
    const framer = new Framer();
    try {
      const engine = this.#o.engine;
      const respondOptions = held ? { confirmed: held.confirmed.then(() => undefined) } : {};
      const outputs = userText !== undefined ? engine.respond(userText, signal, respondOptions) : unprompted && engine.unprompted ? engine.unprompted(signal) : engine.begin(signal);
      const pieces = sentenceStage(outputs, () => (marks.firstText = this.#now()));
      const audio = ttsStage(pieces, this.#o.tts, {
        ...(this.#o.voiceId ? { voiceId: this.#o.voiceId } : {}),
        signal,
        onSynthesisStart: () => (marks.synthStart = this.#now()),
        onFirstAudio: () => (marks.firstAudio = this.#now()),
      });
      for await (const ev of audio) {
        if (signal.aborted) break;
        if (ev.type !== 'sentence_start') await open();
        if (ev.type === 'hangup') hangup = true;
        else if (ev.type === 'tool_call_invocation' || ev.type === 'tool_call_result') {
          // A round trip the reply waited for before it had anything to say delays it.
          if (ev.type === 'tool_call_result' && ev.delayMs !== undefined && marks.firstText === undefined) functionMs += ev.delayMs;
          // Placed where the reply's audio reaches it: after the sentences already synthesized.
          reply.hadToolCalls = true;
          const before = reply.sentences.length;
          const atMs = before > 0 && reply.startedAt !== undefined ? reply.startMs + framesBefore(reply, before) * FRAME_MS : this.elapsedMs();
          const record = this.#toolBudget.admit(ev);
          if (record) {
            const call: TimedToolCall = { record, atMs };
            if (atMs > this.elapsedMs()) reply.placed.push({ call, happenedMs: this.elapsedMs() });
            this.#toolCalls.push(call);
            this.#emit('tool_call', { ...call });
            if (this.#toolBudget.exhausted) this.#emit('record_bound', { what: 'tool_calls' });
          }
        } else if (ev.type === 'sentence_start') {
          reply.sentences[ev.index] = ev.text;
          reply.queued[ev.index] = 0;
          reply.sent[ev.index] = 0;
        } else {
          for (const pcm of framer.push(ev.pcm)) {
            reply.queued[ev.index] = (reply.queued[ev.index] ?? 0) + 1;
            await this.#output.push({ pcm, sentence: ev.index });
            this.#pace();
          }
        }
      }
      if (!signal.aborted) await open();
      for (const pcm of framer.flush()) {
        const last = reply.sentences.length - 1;
        reply.queued[last] = (reply.queued[last] ?? 0) + 1;
        await this.#output.push({ pcm, sentence: last });
      }
    } catch (e) {
      // A held reply that fails is dropped: the confirmed turn is answered anew (#handle).
      if (opened && !signal.aborted && !isAbortError(e)) {
        this.#fail(failureReason(e), e);
        return;
      }
    }
    if (!opened) return;
    reply.synthesisDone = true;
    this.#pace();
    if (!reply.cutOff && !this.#closed) {
      if (reply.queued.some((n) => n > 0)) await drainedP;
      else drained();
    }
    if (this.#reply === reply) this.#reply = undefined;
    if (this.#closed) return;
    // A call placed after audio the user cut off was never reached: it goes back to when it happened.
    for (const p of reply.placed) if (reply.cutAtMs !== undefined && p.call.atMs > reply.cutAtMs) p.call.atMs = p.happenedMs;
    const heard = heardText(reply);
    if (heard) {
      this.#o.engine.agentSpoke(heard, reply.cutOff);
      this.#addUtterance({
        role: 'agent',
        text: heard,
        startMs: reply.startMs,
        endMs: this.elapsedMs(),
        ...(reply.cutOff ? { cutOff: true } : {}),
        ...(reply.hadToolCalls ? { sentences: timedSentences(reply) } : {}),
      });
    }
    const lat: TurnLatency | undefined = turn ? { e2eMs: 0, asrMs: Math.max(0, turn.transcriptAt - turn.speechEndAt), llmMs: 0, ttsMs: 0 } : undefined;
    if (lat && reply.startedAt !== undefined && turn) {
      lat.e2eMs = Math.max(0, reply.startedAt - turn.speechEndAt);
      lat.llmMs = marks.firstText !== undefined ? Math.max(0, marks.firstText - engineStart) : 0;
      lat.ttsMs = marks.firstAudio !== undefined && marks.synthStart !== undefined ? Math.max(0, marks.firstAudio - marks.synthStart) : 0;
      if (functionMs > 0) lat.functionMs = Math.round(functionMs);
      this.#latencies.push(lat);
      this.#emit('latency', { ...lat });
    }
    if (hangup) this.#end('agent_hangup');
  }

  /**
   * Resolves `ms` later on the pipeline clock. No timer of its own: the 10 ms timer (or, in
   * lock-step, every pushAudio) ticks, so tests move this time by hand like the rest.
   */
  #after(ms: number): Promise<void> {
    return new Promise((resolve) => this.#deadlines.add({ at: this.#now() + ms, fire: resolve }));
  }

  /** Called by the timer and on every pushAudio: fires the deadlines due, then paces output. */
  #tick(): void {
    if (this.#deadlines.size > 0) {
      const now = this.#now();
      for (const d of this.#deadlines) {
        if (d.at > now) continue;
        this.#deadlines.delete(d);
        d.fire();
      }
    }
    this.#pace();
  }

  /** Sends agent frames up to real time + lead; called by the timer and on every pushAudio. */
  #pace(): void {
    const reply = this.#reply;
    if (!reply || this.#closed) return;
    const now = this.#now();
    if (!this.#speaking) {
      if (this.#output.size === 0) {
        if (reply.synthesisDone) reply.drained();
        return;
      }
      this.#speaking = true;
      this.#talkStart = now;
      this.#sentMs = 0;
      reply.startedAt = now;
      reply.startMs = now - this.#t0;
      this.#emit('agent_start_talking');
    }
    while (this.#sentMs < now - this.#talkStart + this.#o.outputLeadMs) {
      const f = this.#output.tryShift();
      if (!f) break;
      reply.sent[f.sentence] = (reply.sent[f.sentence] ?? 0) + 1;
      this.#sentMs += FRAME_MS;
      this.#emit('agent_audio', f.pcm);
      if (this.#reply !== reply) return; // a listener closed or interrupted the call
    }
    if (this.#output.size === 0) {
      if (reply.synthesisDone) {
        // Wait for the last frame to be played out (by real time) before saying we stopped.
        if (now - this.#talkStart >= this.#sentMs - this.#o.outputLeadMs) {
          this.#speaking = false;
          this.#emit('agent_stop_talking', { interrupted: false });
          reply.drained();
        }
      } else {
        // Underrun (synthesis slower than playback): do not build up a debt to burst out later.
        this.#talkStart = Math.max(this.#talkStart, now - this.#sentMs);
      }
    }
  }

  #interrupt(): void {
    const reply = this.#reply;
    if (!reply || reply.cutOff) return;
    reply.cutOff = true;
    reply.cutAtMs = this.elapsedMs();
    reply.ctrl.abort();
    this.#output.clear();
    if (this.#speaking) {
      this.#speaking = false;
      this.#emit('agent_stop_talking', { interrupted: true });
    }
    reply.drained();
  }

  /**
   * The call ends while a reply plays (the user hung up, the client vanished...): what was played
   * stays in the transcript, marked cut off unless it had all been played, as a barge-in keeps it.
   */
  #keepSpokenPart(): void {
    const reply = this.#reply;
    if (!reply || reply.startedAt === undefined) return;
    // Exactly one of this and #runReply records a reply: it records it only while not closed.
    const complete = reply.synthesisDone && reply.queued.every((n, i) => (reply.sent[i] ?? 0) >= n);
    reply.cutOff ||= !complete;
    const heard = heardText(reply);
    if (!heard) return;
    this.#addUtterance({
      role: 'agent', text: heard, startMs: reply.startMs, endMs: this.elapsedMs(),
      ...(reply.cutOff ? { cutOff: true } : {}),
      ...(reply.hadToolCalls ? { sentences: timedSentences(reply) } : {}),
    });
  }

  #addUtterance(utterance: Utterance): void {
    const text = this.#transcriptBudget.admit(utterance.text);
    if (text === undefined) {
      if (this.#transcriptBudget.full && !this.#transcriptFullSaid) {
        this.#transcriptFullSaid = true;
        this.#emit('record_bound', { what: 'transcript' });
      }
      return;
    }
    const u = text === utterance.text ? utterance : { ...utterance, text };
    // Keep start order: a user utterance can be recognised while an earlier agent reply still plays.
    let i = this.#transcript.length;
    while (i > 0 && (this.#transcript[i - 1]?.startMs ?? 0) > u.startMs) i--;
    this.#transcript.splice(i, 0, u);
    this.#emit('transcript_update', this.transcript());
  }

  #fail(reason: FailureReason, e: unknown): void {
    if (this.#ended) return;
    const message = e instanceof Error ? e.message : String(e);
    this.#emit('error', { reason, message, cause: e });
    this.#end(reason);
  }

  #end(reason: HangupReason): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#dropSpeculation();
    if (this.#speaking) {
      this.#speaking = false;
      this.#emit('agent_stop_talking', { interrupted: false });
    }
    this.#emit('hangup', { reason });
    // Stop work but leave close() (and the release of resources) to the owner of the call.
    this.#reply?.ctrl.abort();
    this.#input.close();
    this.#jobs.close();
  }
}

/** The same words, whatever the case and punctuation ("Yes, please." and "yes please"). */
function sameWords(a: string, b: string): boolean {
  const norm = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').split(/\s+/).filter(Boolean).join(' ');
  return norm(a) === norm(b);
}

/**
 * The reason a failed reply ends the call with: the engine's (EngineError) or the provider's
 * kind (ProviderError: synthesis failures are wrapped as such by the TTS stage); anything else is
 * an error nobody expected, `error_unknown`, never blamed on a provider.
 */
function failureReason(e: unknown): FailureReason {
  if (e instanceof EngineError) return 'error_llm';
  if (e instanceof ProviderError) return e.kind === 'asr' ? 'error_asr' : e.kind === 'llm' ? 'error_llm' : 'error_tts';
  return 'error_unknown';
}

/** What the user heard: whole sentences played, plus the played share of the sentence cut. */
function heardText(r: Reply): string {
  return heardSentences(r).filter(Boolean).join(' ').trim();
}

/** Frames queued for the reply's sentences before sentence `index` (its offset in the reply's audio). */
function framesBefore(r: Reply, index: number): number {
  let n = 0;
  for (let i = 0; i < index; i++) n += r.queued[i] ?? 0;
  return n;
}

/** The heard sentences of a reply, each with when it began to play (ms since the pipeline started). */
function timedSentences(r: Reply): Array<{ text: string; startMs: number }> {
  return heardSentences(r).flatMap((text, i) => (text ? [{ text, startMs: r.startMs + framesBefore(r, i) * FRAME_MS }] : []));
}

/** What was heard of each sentence of a reply: all of them, or up to the cut when it was cut off. */
function heardSentences(r: Reply): string[] {
  if (!r.cutOff) return r.sentences.map((s) => s ?? '');
  const parts: string[] = [];
  for (let i = 0; i < r.sentences.length; i++) {
    const text = r.sentences[i] ?? '';
    const queued = r.queued[i] ?? 0;
    const sent = r.sent[i] ?? 0;
    if (sent === 0) break;
    if (sent >= queued && i < r.sentences.length - 1) {
      parts.push(text);
      continue;
    }
    const ws = text.split(/\s+/).filter(Boolean);
    const n = Math.max(1, Math.floor((ws.length * sent) / Math.max(queued, 1)));
    parts.push(ws.slice(0, n).join(' '));
    break;
  }
  return parts;
}
