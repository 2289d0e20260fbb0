import type { SttStream } from '../providers/stt.ts';
import type { VoiceActivityDetector } from '../providers/vad.ts';
import { isAbortError } from '../providers/errors.ts';
import { type Scheduler, type TimerHandle, realScheduler } from '../lib/scheduler.ts';
import { Channel } from './channel.ts';
import { FRAME_MS, Framer, bytesToSamples, frameSamples, samplesToMs, type AudioFrame } from './frames.ts';
import { openRecogniser, ttsAtRate } from './call-rate.ts';
import type { TimedToolCall, Utterance } from './transcript.ts';
import { UTTERANCE_MAX_CHARS, capText } from './record-bounds.ts';
import { ConversationRecord } from './conversation-record.ts';
import { expectedPhrases, hintRecogniser } from './recogniser-hints.ts';
import { EndOfTurnJudge } from './turn-trace.ts';
export { HYPOTHESIS_SETTLE_MS } from './end-of-turn.ts';
import { BandProbe } from './band-probe.ts';
import type { TurnLatency } from './latency.ts';
import { vadStage } from './stages/vad.stage.ts';
import { denoiseStage } from './stages/denoise.stage.ts';
import type { NoiseSuppressor } from '../providers/audio/rnnoise.ts';
import { turnStage } from './stages/turn.stage.ts';
import { sttStage } from './stages/stt.stage.ts';
import { SpeechFeed } from './stages/speech-feed.ts';
import { PacedPlayout } from './playout.ts';
import { DtmfCollector } from './dtmf.ts';
import { Replies, type TurnTiming } from './reply.ts';
import { settleHangup } from './transfer.ts';
import { Speculations } from './speculation.ts';
import { DEFAULT_OUTPUT_LEAD_MS, type FailureReason, type HangupReason, type PipelineEvents, type VoicePipelineOptions } from './pipeline.types.ts';
import { keyedTurn, type PipelineJob as Job } from './pipeline-job.ts';
import { bargeInThresholdMs } from './barge-in.ts';
import { Backchannels } from './backchannel.ts';

export type { FailureReason, HangupReason, PipelineEvents, VoicePipelineOptions } from './pipeline.types.ts';

/**
 * Preemptive replies: silence after the user's speech before the agent prepares its reply to what
 * the recogniser has heard so far, ms; well under the shortest end of turn, so the reply is ready.
 */
export const PREEMPT_AFTER_MS = 100;

/** Default of VoicePipelineOptions.recognitionTimeoutMs (and of STT_TIMEOUT_MS), ms. */
export const DEFAULT_RECOGNITION_TIMEOUT_MS = 5_000;
/** User audio this far behind the call's clock follows a gap, not jitter: the timeline skips the gap. */
export const MAX_INPUT_LAG_MS = 300;

/**
 * The voice pipeline of one call, with no I/O of its own: feed it the caller's audio with
 * pushAudio(); it emits the agent's audio and the call's events. It coordinates the listen loop
 * (VAD -> turn detection -> recognition), the respond loop (one job at a time: the opening,
 * unprompted speech, each user turn), the replies (src/voice/reply.ts: engine -> synthesis ->
 * playout), the preemptive replies (src/voice/speculation.ts) and the playout
 * (src/voice/playout.ts: the pacer). Construct, listen, `await start()`, `close()` at the end.
 */
export class VoicePipeline {
  readonly #o: Required<Pick<VoicePipelineOptions, 'interruptionSensitivity' | 'startSpeaker' | 'endpointingMs' | 'timers' | 'outputLeadMs' | 'sampleRateHz'>> & VoicePipelineOptions;
  readonly #time: Scheduler;
  readonly #listeners: { [K in keyof PipelineEvents]?: Array<PipelineEvents[K]> } = {};
  readonly #ctrl = new AbortController();
  readonly #input: Channel<AudioFrame>;
  readonly #jobs = new Channel<Job>({ capacity: 16, overflow: 'drop_oldest' });
  readonly #framer: Framer;
  readonly #playout: PacedPlayout;
  readonly #replies: Replies;
  readonly #speculations: Speculations;
  readonly #record: ConversationRecord;
  readonly #bargeInMs: number;
  /** Measures the first BAND_SAMPLE_MS of voiced user audio. */
  readonly #band = new BandProbe();
  #t0 = 0;
  #inputFrames = 0;
  #stt: SttStream | undefined;
  #vad: VoiceActivityDetector | undefined;
  #denoiser: NoiseSuppressor | undefined;
  #tasks: Promise<void>[] = [];
  /** Recognition deadlines armed on the scheduler (cleared at close). */
  readonly #deadlines = new Set<TimerHandle>();
  /** start()'s opening of the recogniser, VAD and denoiser: close() releases them once it has settled. */
  #starting: Promise<void> | undefined;
  #ended = false;
  #closed = false;
  #begun = false;
  #userHasSpoken = false;
  /** Clock times of the last voiced user frame: processed, and received (the pipeline's input). */
  #lastVoiced = { at: 0, receivedAt: 0 };
  /** The open user segment started while the agent was busy and has not (yet) interrupted it. */
  #segmentOverAgent = false;
  #segmentInterrupted = false;
  /** The recogniser's latest interim hypothesis of the open user utterance ('' before any). */
  #interim = '';
  /** The respond loop is handling a job. */
  #busy = false;
  /** Keypad input being collected into a turn (created on the first key). */
  #digits: DtmfCollector | undefined;
  /** The agent's backchannels (Retell's enable_backchannel; voice/backchannel.ts). */
  readonly #backchannels: Backchannels | undefined;

  constructor(options: VoicePipelineOptions) {
    this.#o = { interruptionSensitivity: 1, startSpeaker: 'agent', endpointingMs: 500, timers: true, outputLeadMs: DEFAULT_OUTPUT_LEAD_MS, sampleRateHz: 16_000, ...options, tts: ttsAtRate(options.tts, options.sampleRateHz ?? 16_000) };
    this.#framer = new Framer(frameSamples(this.#o.sampleRateHz));
    this.#time = options.scheduler ?? realScheduler;
    this.#input = new Channel({ capacity: options.inputQueueFrames ?? 50, overflow: 'drop_oldest' });
    this.#bargeInMs = bargeInThresholdMs(this.#o.interruptionSensitivity);
    this.#backchannels = options.backchannel ? new Backchannels(options.backchannel) : undefined;
    this.#record = new ConversationRecord({
      transcript: (transcript) => this.#emit('transcript_update', transcript),
      toolCall: (call) => this.#emit('tool_call', call),
      latency: (record) => this.#emit('latency', record),
      bound: (what) => this.#emit('record_bound', { what }),
    });
    this.#playout = new PacedPlayout({
      scheduler: this.#time,
      leadMs: this.#o.outputLeadMs,
      capacity: options.outputQueueFrames ?? 1500,
      timers: this.#o.timers,
      ...(options.playedMs ? { position: options.playedMs } : {}),
      events: {
        started: () => this.#emit('agent_start_talking', { atMs: this.#replies.started() ?? this.elapsedMs() }),
        frame: (pcm) => this.#emit('agent_audio', pcm),
        stopped: (interrupted) => this.#emit('agent_stop_talking', { interrupted }),
      },
    });
    this.#replies = new Replies({
      engine: this.#o.engine,
      tts: this.#o.tts,
      frameSamples: frameSamples(this.#o.sampleRateHz),
      voiceId: this.#o.voiceId,
      ...(this.#o.volume !== undefined ? { volume: this.#o.volume } : {}), normaliseForSpeech: this.#o.normaliseForSpeech === true,
      ...(this.#o.speech ? { speech: this.#o.speech } : {}),
      playout: this.#playout,
      signal: this.#ctrl.signal,
      time: this.#time,
      elapsedMs: () => this.elapsedMs(),
      closed: () => this.#closed,
      toolCall: (record, atMs) => this.#record.addToolCall(record, atMs),
      heard: (utterance) => this.#record.addUtterance(utterance),
      latency: (record) => this.#record.addLatency(record), turnTrace: (trace) => this.#o.turnTrace?.(trace),
      failed: (reason, error) => this.#fail(reason, error),
      hangup: (ending) => settleHangup(ending, { engine: this.#o.engine, transfer: this.#o.transfer, end: (r, to) => this.#end(r, to), resume: () => this.speakUnprompted() }),
    });
    this.#speculations = new Speculations({
      engine: this.#o.engine,
      enabled: this.#o.preemptive ?? false,
      run: (text, held) => this.#replies.run(text, undefined, false, held),
    });
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
    return this.#record.transcript();
  }

  /** The function calls so far (invocations and results), in the order they happened. */
  toolCalls(): TimedToolCall[] {
    return this.#record.toolCalls();
  }

  /** Latency records so far (a copy). */
  latencies(): TurnLatency[] {
    return this.#record.latencies();
  }

  /** Preemptive replies so far: played (`used`) and thrown away (`dropped`). */
  preemptions(): { used: number; dropped: number } {
    return this.#speculations.counts();
  }

  /** True once `hangup` has been emitted. */
  get ended(): boolean {
    return this.#ended;
  }

  /** ms since start() on the pipeline clock. */
  elapsedMs(): number {
    return this.#time.now() - this.#t0;
  }

  /**
   * Opens the recogniser and VAD and, with startSpeaker 'agent', starts the opening message.
   * Never throws: a missing engine ends the call with `error` + `hangup` events instead.
   */
  start(): Promise<void> {
    return (this.#starting ??= this.#open());
  }

  async #open(): Promise<void> {
    this.#t0 = this.#time.now();
    try {
      this.#vad = await this.#o.vad.create({ aggressiveness: this.#o.vadAggressiveness ?? 2, sampleRateHz: this.#o.sampleRateHz });
      this.#denoiser = await this.#o.denoiser?.(this.#o.sampleRateHz);
      this.#stt = await openRecogniser(this.#o.stt, this.#o.sampleRateHz, {
        signal: this.#ctrl.signal,
        onInterim: ({ text }) => {
          this.#interim = text;
          this.#emit('user_interim', { text });
        },
        ...(this.#o.language ? { language: this.#o.language } : {}),
        keywords: expectedPhrases(this.#o.engine, this.#o.boostedKeywords),
      });
    } catch (e) {
      if (!this.#closed) this.#fail('error_asr', e);
      return;
    }
    if (this.#closed) return;
    this.#tasks.push(this.#listenLoop(this.#stt, this.#vad), this.#respondLoop());
    if (this.#backchannels) this.#tasks.push(this.#backchannels.prepare(this.#o, this.#ctrl.signal));
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

  /**
   * Feeds user audio (16-bit LE mono at the call's `sampleRateHz`, any length); returns its place
   * on the call's timeline, ms (undefined once stopped). The first audio starts at the clock; a later gap the caller never
   * sent (over maxInputLagMs, default MAX_INPUT_LAG_MS, behind it) is skipped, so utterances keep their spoken order.
   */
  pushAudio(chunk: Int16Array | Uint8Array): number | undefined {
    if (this.#ended || this.#closed) return undefined;
    const pcm = chunk instanceof Int16Array ? chunk : bytesToSamples(chunk);
    if (this.#o.timers) {
      const behind = this.elapsedMs() - this.#inputFrames * FRAME_MS;
      const allowed = this.#inputFrames > 0 || this.#framer.pendingSamples > 0 ? this.#o.maxInputLagMs ?? MAX_INPUT_LAG_MS : 0;
      if (behind > allowed) this.#inputFrames += Math.floor(behind / FRAME_MS);
    }
    const atMs = this.#inputFrames * FRAME_MS + samplesToMs(this.#framer.pendingSamples, this.#o.sampleRateHz);
    for (const f of this.#framer.push(pcm)) {
      void this.#input.push({ pcm: f, offsetMs: this.#inputFrames++ * FRAME_MS, receivedMs: this.elapsedMs() });
    }
    // Lock-step (no timers): the caller's audio is the clock that paces the agent's.
    if (!this.#o.timers) this.#playout.tick();
    return atMs;
  }

  /** Idempotent: stops every task and releases the call's recogniser stream and VAD. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#replies.keepSpokenPart();
    this.#digits?.close();
    for (const d of this.#deadlines) this.#time.clear(d);
    this.#ctrl.abort();
    this.#input.close();
    this.#jobs.close();
    this.#playout.close();
    const rolledBack = this.#speculations.close();
    await Promise.allSettled(this.#tasks);
    // The engine's state is read once the call is over: the prepared replies are rolled back first.
    await rolledBack;
    await this.#starting; // a call closed while its recogniser was opening: what it opened is released here
    await this.#stt?.close();
    this.#vad?.close();
    this.#denoiser?.close();
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
      const feed = new SpeechFeed(stt);
      const judge = eot ? new EndOfTurnJudge(eot, () => feed.pendingMs(), () => this.#interim) : undefined;
      const turnOptions = judge ? { endOfTurnMs: (silenceMs: number) => judge.silenceMs(silenceMs) } : { endpointingMs: this.#o.endpointingMs };
      const events = sttStage(turnStage(vadStage(denoiseStage(this.#input, this.#denoiser, signal), vad, signal, this.#o.minSpeechRms), turnOptions, signal), feed, signal, {
        provider: this.#o.stt.id,
        now: () => this.#time.now(),
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
            this.#speculations.dropPending();
            this.#interim = '';
            this.#userHasSpoken = true;
            this.#segmentOverAgent = this.#replies.active;
            this.#segmentInterrupted = false;
            this.#backchannels?.timer.utteranceStarted();
            this.#emit('user_start_talking');
            break;
          case 'speech':
            if (ev.frame.speech) {
              this.#lastVoiced = { at: this.#time.now(), receivedAt: this.#t0 + (ev.frame.receivedMs ?? ev.frame.offsetMs) };
              const band = this.#band.push(ev.frame.pcm, this.#o.sampleRateHz);
              if (band) this.#emit('audio_band', band);
              this.#speculations.dropPending(); // the user goes on
            } else if (ev.silenceMs >= PREEMPT_AFTER_MS) {
              this.#speculations.consider(this.#interim, this.#idle());
            }
            if (this.#backchannels?.timer.frame({ offsetMs: ev.frame.offsetMs, ...ev }, this.#idle() && !this.#playout.speaking)) {
              this.#backchannels.play(this.#playout, (word) => this.#emit('backchannel', { atMs: this.elapsedMs(), word }));
            }
            if (this.#replies.active && ev.voicedMs >= this.#bargeInMs) {
              // A reply the engine holds uninterruptible plays on; the words over it are answered after it.
              if (this.#o.engine.interruptible?.() !== false) this.#replies.interrupt();
              this.#segmentInterrupted = true;
            }
            break;
          case 'user_turn': {
            const backchannel = this.#segmentOverAgent && !this.#segmentInterrupted;
            // The turn has ended: what was prepared for it is its own now, whatever the user says next.
            const speculation = this.#speculations.takePending();
            void this.#jobs.push({ kind: 'turn', startMs: ev.startMs, endMs: ev.endMs, heardAtMs: ev.heardAtMs, speechEndAt: this.#lastVoiced.at, transcript: ev.transcript, backchannel, speculation, marks: { voicedReceivedAt: this.#lastVoiced.receivedAt, endedAt: this.#time.now(), decision: judge?.decision() } });
            break;
          }
        }
      }
    } catch (e) {
      if (!signal.aborted) this.#fail('error_asr', e);
    }
  }

  /** Nothing else for the agent to do: no reply playing or being prepared, no turn waiting, no speech over it. */
  #idle(): boolean {
    if (this.#ended || this.#closed) return false;
    return !this.#replies.active && !this.#busy && this.#jobs.size === 0 && !(this.#segmentOverAgent && !this.#segmentInterrupted);
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
      await this.#speculations.rollback;
      await this.#replies.run(undefined, undefined, job.kind === 'unprompted');
      hintRecogniser(this.#stt, this.#o.engine, this.#o.boostedKeywords);
      return;
    }
    const settled = await job.transcript;
    const spec = job.speculation;
    // What a recogniser answers is bounded like any peer's text: no turn is longer than this.
    const text = settled.ok ? capText(settled.result.text.trim(), UTTERANCE_MAX_CHARS) : '';
    // The reply prepared in the turn's last pause plays only if the turn ended with the words it answers.
    const usable = spec !== undefined && text !== '' && !job.backchannel && this.#speculations.answers(spec, text);
    if (spec && !usable) this.#speculations.drop(spec);
    if (this.#closed) return;
    if (!settled.ok) {
      if (isAbortError(settled.error)) return;
      this.#fail('error_asr', settled.error);
      return;
    }
    if (!text) return;
    this.#begun = true;
    await this.#speculations.rollback; // the engine is back where the turn began, if a prepared reply was dropped
    this.#record.addUtterance({ role: 'user', text, startMs: job.startMs, endMs: job.endMs, heardAtMs: job.heardAtMs, ...(settled.result.words ? { words: settled.result.words } : {}) });
    // Speech over the agent that did not interrupt it (too short for the sensitivity) is kept in
    // the transcript but not answered.
    if (job.backchannel) return;
    const turn: TurnTiming = { speechEndAt: job.speechEndAt, transcriptAt: settled.atMs, ...(job.marks ? { marks: job.marks } : {}) };
    if (spec && usable) {
      spec.confirm(turn);
      await spec.done;
      if (spec.opened) {
        this.#speculations.used();
        hintRecogniser(this.#stt, this.#o.engine, this.#o.boostedKeywords);
        return;
      }
      // It failed before it could play (and rolled the engine back): the turn is answered as usual.
    }
    await this.#replies.run(text, turn, false, undefined, settled.result.words);
    hintRecogniser(this.#stt, this.#o.engine, this.#o.boostedKeywords);
  }

  /**
   * Keys the caller pressed (a phone endpoint's DTMF), collected into turns by `dtmf` options:
   * each turn is answered as the caller's words (the digits as text), after a key press
   * interrupts the agent's reply as speech would. A turn also ends at the most digits the engine
   * expects (a flow node's digits variable's max_digits), when that is fewer.
   */
  pushDigits(keys: string): void {
    if (this.#ended || this.#closed || !this.#o.dtmf) return;
    this.#digits ??= new DtmfCollector(this.#o.dtmf, this.#time, (digits) => {
      if (!this.#ended && !this.#closed) void this.#jobs.push(keyedTurn(digits, this.elapsedMs(), this.#time.now()));
    });
    if (this.#replies.active) this.#replies.interrupt();
    this.#speculations.dropPending();
    this.#userHasSpoken = true;
    this.#digits.push(keys, this.#o.engine.expectation?.().digitCount?.max);
  }

  /** Resolves `ms` later on the pipeline's scheduler (recognition deadlines). */
  #after(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const handle = this.#time.setTimeout(() => {
        this.#deadlines.delete(handle);
        resolve();
      }, ms);
      this.#deadlines.add(handle);
    });
  }

  #fail(reason: FailureReason, e: unknown): void {
    if (this.#ended) return;
    const message = e instanceof Error ? e.message : String(e);
    this.#emit('error', { reason, message, cause: e });
    this.#end(reason);
  }

  /** Ends the pipeline once; `transferTo`: the engine's transfer destination (reason `call_transfer`). */
  #end(reason: HangupReason, transferTo?: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#speculations.dropPending();
    this.#playout.stop();
    this.#emit('hangup', transferTo === undefined ? { reason } : { reason, transferTo });
    // Stop work but leave close() (and the release of resources) to the owner of the call.
    this.#replies.abort();
    this.#input.close();
    this.#jobs.close();
  }
}
