import type { TimerHandle } from '../lib/scheduler.ts';
import { type DisconnectionReason, statusForReason } from '../domain/call-status.ts';
import type { Call } from '../domain/call.ts';
import type { CallCheckpoint } from '../domain/call-checkpoint.ts';
import { DEFAULT_OUTPUT_LEAD_MS, toTranscriptObject, VoicePipeline, type PipelineEvents, type CallVariables, type EngineOutcome, type LlmWebsocketReason, type TurnContextSource, type Utterance, withBeginDelay } from '../voice/index.ts';
import type { EngineSnapshot } from '../domain/agent.ts';
import { CallRecorder } from './call-recorder.ts';
import { voiceSettings } from './voice-settings.ts';
import { callOutcome } from './call-results.ts';
import { engineKnowledge, knowledgeContextSource } from './knowledge-context.ts';
import { RetrievalRecord } from './retrieval-record.ts';
import { NodePath } from './node-path.ts';
import type { KnowledgePassage } from '../domain/knowledge-base.ts';
import { type AgentForCall, buildEngine, effectiveEngine, effectiveSettings, engineNeedsMissingLlm } from './engine-factory.ts';
import { type CallScope, runInCallScope } from './call-scope.ts';
import { CoalescedRun } from '../lib/coalesced-run.ts';
import { STORE_RESERVE_MS, type EndOptions, type SessionDeps } from './call-session.types.ts';
import type { CallEndpoint, CallEvent, EndpointSink, TranscriptLine } from './endpoint.ts';
import { ConversationTimers } from './conversation-timers.ts';
import { describeFailure, failureMessage } from './failures.ts';
import { voicemailGateFor } from './voicemail.ts';
import type { VoicemailGate } from '../voice/voicemail-gate.ts';

export { DEFAULT_SESSION_TIMINGS, STORE_RESERVE_MS, type EndOptions, type SessionCallService, type SessionDeps, type SessionTimings } from './call-session.types.ts';

/**
 * One running call on one endpoint, whatever carries it: builds its response engine from the
 * agent version and the call's overrides, drives a VoicePipeline with the caller's audio, tells
 * the endpoint the call's events and plays it the agent's audio, records both sides, ends the call
 * on hang-ups, timeouts and failures, and then stores the transcript, recording, latency and
 * analysis through the call lifecycle. It knows no wire protocol: the endpoint maps its neutral
 * events (src/media/endpoint.ts).
 */
export class CallSession implements CallScope {
  readonly callId: string;
  /**
   * What the endpoint hands the caller's audio and actions to. Every method runs inside the call's
   * error boundary: what it throws ends this call, never the process.
   */
  readonly sink: EndpointSink;
  readonly #call: Call;
  readonly #agent: AgentForCall;
  readonly #endpoint: CallEndpoint;
  readonly #d: SessionDeps;
  #vars: CallVariables;
  #pipeline: VoicePipeline | undefined;
  /** Answering-machine detection (outbound phone calls whose agent asks for it; media/voicemail.ts). */
  #voicemail: VoicemailGate | undefined;
  #recorder: CallRecorder | undefined;
  /** Where the engine is, and a flow's moves (set once the engine is built). */
  #nodes: NodePath | undefined;
  #reachedEnd: () => Pick<EngineOutcome, 'reachedEnd' | 'ending' | 'names'> = () => ({ reachedEnd: false, names: [] });
  #utterance = 0;
  #talkStartMs: number | undefined;
  /** Backchannels said so far (the call's log line at its end). */
  #backchannels = 0;
  #lastAudioAt: number;
  #timers: TimerHandle[] = [];
  #conversation: ConversationTimers | undefined;
  #engineType: EngineSnapshot['type'] | undefined;
  /** The knowledge-base searches of the call's turns (those of dropped preemptive replies taken back). */
  readonly #retrievals = new RetrievalRecord();
  /** Releases the engine's resources (a custom LLM's socket). */
  #closeEngine: (() => void) | undefined;
  #ending: Promise<void> | undefined;
  /**
   * Saves the transcript so far and where the conversation is, after every utterance, so that a
   * server taking over this call if this process is lost ends it with them. One write at a time:
   * utterances that come while one is in flight are saved together by the next.
   */
  readonly #checkpoints = new CoalescedRun(() => this.#d.calls.checkpointCall(this.callId, this.#snapshot()).then(() => undefined), {
    stopped: () => this.ended,
    onError: (error) => this.#d.log.warn({ err: error }, 'saving the call checkpoint failed'),
  });
  /**
   * Re-reads the call's variables, so update-call's override_dynamic_variables apply from the next
   * turn: when an update is pushed, and as each user turn starts. A read asked for while one is in
   * flight runs again after it, so the latest update is never missed.
   */
  readonly #variables = new CoalescedRun(
    async () => {
      const row = await this.#d.calls.readCall(this.callId);
      if (row) this.#vars = variablesOf(row);
    },
    { stopped: () => this.ended, onError: (error) => this.#d.log.warn({ err: error }, 'reading call variables failed') },
  );
  /** Where the call is being transferred, while the carrier has not answered (#transfer). */
  #transferringTo: string | undefined;
  /** Cuts the post-call analysis short (a deadline, see EndOptions). */
  readonly #analysisCut = new AbortController();
  /** Aborted when the call ends: stops function requests still running. */
  readonly #callOver = new AbortController();
  #analysisCutAt = Infinity;
  #analysisCutTimer: TimerHandle | undefined;
  /** The analysis has an outcome: a deadline no longer changes anything. */
  #analysed = false;
  #markDone!: () => void;
  readonly #done = new Promise<void>((resolve) => (this.#markDone = resolve));

  constructor(call: Call, agent: AgentForCall, endpoint: CallEndpoint, deps: SessionDeps) {
    this.callId = call.call_id;
    this.#call = call;
    this.#agent = agent;
    this.#endpoint = endpoint;
    this.#d = deps;
    this.#vars = variablesOf(call);
    this.#lastAudioAt = deps.scheduler.now();
    this.sink = {
      audio: this.guard('endpoint_audio', (pcm: Int16Array) => this.#onAudio(pcm)),
      hangup: this.guard('endpoint_hangup', () => void this.#callerLeft('user_hangup')),
      lost: this.guard('endpoint_lost', () => void this.#callerLeft('client_disconnected')),
      flood: this.guard('endpoint_flood', () => this.#onFlood()),
      dtmf: this.guard('endpoint_dtmf', (digits: string) => this.#pipeline?.pushDigits(digits)),
    };
  }

  /** Resolves once the call has ended and its results are stored. */
  get done(): Promise<void> {
    return this.#done;
  }

  get ended(): boolean {
    return this.#ending !== undefined;
  }

  /**
   * Starts the call's media inside the call's scope (src/media/call-scope.ts): whatever it starts
   * belongs to the call. Never throws: a call that cannot run ends with a reason.
   */
  start(): Promise<void> {
    return runInCallScope(this, () =>
      this.#start().catch((error: unknown) => {
        this.crash('start', error);
      }),
    );
  }

  /**
   * Wraps a callback into this call (an endpoint's socket handler, a peer's message): it runs in
   * the call's scope, and what it throws ends this call (`crash`) instead of reaching the event
   * loop, where it would end the process.
   */
  guard<A extends unknown[]>(where: string, fn: (...args: A) => void): (...args: A) => void {
    return (...args: A) => {
      try {
        runInCallScope(this, () => fn(...args));
      } catch (error) {
        this.crash(where, error);
      }
    };
  }

  /**
   * An error nothing expected, raised while serving this call (`where`: the part that failed):
   * logged with the call id, counted, and the call ends `error_unknown`. The process goes on.
   */
  crash(where: string, error: unknown): void {
    this.#d.log.error({ err: error, where }, 'call failed on an unexpected error: it ends, the server goes on');
    this.#d.crashes?.inc({ where });
    if (this.#ending) return;
    // Ending first: an endpoint that throws again while told is then a call already ending.
    void this.end('error_unknown');
    this.#tell({ type: 'error', code: 'error_unknown', message: failureMessage('error_unknown') });
  }

  /** The engine's knowledge bases as its reference material, when it names any and the server has them. */
  #knowledgeSource(engine: EngineSnapshot): { contextSource?: TurnContextSource } {
    const knowledge = engineKnowledge(engine);
    if (!knowledge || !this.#d.knowledge) return {};
    const onFailure = (error: unknown) => this.#d.log.warn({ err: error }, 'knowledge retrieval failed: the turn goes on without it');
    const onChunks = (chunks: readonly KnowledgePassage[]) => this.#retrievals.keep(chunks, this.#pipeline?.elapsedMs() ?? 0);
    return { contextSource: knowledgeContextSource({ accountId: this.#call.account_id, ...knowledge, retriever: this.#d.knowledge, onFailure, onChunks }) };
  }

  async #start(): Promise<void> {
    const override = this.#call.agent_override;
    const settings = effectiveSettings(this.#agent, override);
    const engineDef = effectiveEngine(this.#agent, override);
    const missing = engineNeedsMissingLlm(engineDef, this.#d.providers.llm !== undefined);
    let built;
    try {
      if (missing) throw new Error(missing);
      built = buildEngine({
        engine: engineDef,
        llm: this.#d.providers.llm,
        ...(this.#d.tools ? { tools: this.#d.tools({ accountId: this.#call.account_id, callId: this.callId }) } : {}),
        ...(this.#d.functions ? { functions: this.#d.functions({ accountId: this.#call.account_id, callId: this.callId }, this.#callOver.signal) } : {}),
        variables: () => this.#vars,
        currentNodeId: this.#call.current_node_id,
        currentState: this.#call.current_state,
        language: settings.language,
        canTransfer: this.#endpoint.transfer !== undefined,
        ...(this.#endpoint.sendDigits ? { keypad: (digits: string) => this.#endpoint.sendDigits?.(digits) ?? Promise.resolve() } : {}),
        ...this.#knowledgeSource(engineDef),
        ...(this.#d.customLlm
          ? {
              customLlm: {
                callId: this.callId,
                open: this.#d.customLlm.open,
                callDetails: () => this.#d.customLlm?.callDetails(this.#call),
                onFailure: (reason: LlmWebsocketReason, detail: string) => this.#engineFailed(reason, detail),
                onUnprompted: () => this.#pipeline?.speakUnprompted(),
                onMetadata: (metadata: unknown) => this.#tell({ type: 'metadata', metadata }),
                scheduler: this.#d.scheduler,
              },
            }
          : {}),
        onToolError: (nodeId, error) =>
          this.#d.log.warn({ nodeId, code: (error as { code?: unknown })?.code }, 'flow tool node failed'),
        onEdgeError: (nodeId, edgeId, error) =>
          this.#d.log.warn({ nodeId, edgeId, detail: describeFailure(error) }, 'flow edge condition could not be judged: it does not hold (the else path)'),
      });
    } catch (error) {
      this.#d.log.warn({ err: error }, 'engine unavailable for call');
      this.#tell({ type: 'error', code: 'engine_unavailable', message: error instanceof Error ? error.message : 'engine unavailable' });
      await this.end('error_engine_unavailable');
      return;
    }
    this.#nodes = new NodePath(built, engineDef);
    this.#engineType = engineDef.type;
    this.#closeEngine = built.close;
    this.#reachedEnd = () => built.engine.outcome();
    const remind = built.remind;

    const endpoint = this.#endpoint;
    // Issue 24: on an outbound phone call, the agent does not talk over an answering machine's greeting.
    const voicemail = voicemailGateFor({
      call: this.#call,
      sampleRateHz: endpoint.sampleRate,
      settings,
      vars: this.#vars,
      llm: this.#d.providers.llm,
      log: this.#d.log,
      hooks: {
        startSpeaker: built.startSpeaker,
        onMachine: () => this.#pipeline?.speakUnprompted(),
        lastUserStartMs: () => this.#pipeline?.transcript().findLast((u) => u.role === 'user')?.startMs,
        elapsedMs: () => this.#pipeline?.elapsedMs() ?? 0,
      },
    });
    this.#voicemail = voicemail;
    // Retell's begin_message_delay_ms (issue 26): the opening waits; versions saved before it have none.
    // A search made for a preemptive reply that is dropped is taken back with the engine's rollback.
    const delayed = withBeginDelay(this.#retrievals.rollingBack(built.engine), settings.begin_message_delay_ms ?? 0, this.#d.scheduler);
    const p = new VoicePipeline({
      ...this.#d.providers,
      engine: voicemail ? voicemail.wrap(delayed) : delayed,
      ...voiceSettings(settings, this.#d.providers, this.#d.log),
      startSpeaker: built.startSpeaker,
      recognitionTimeoutMs: this.#d.timings.recognitionTimeoutMs,
      ...(built.beginAfterUserSilenceMs !== undefined ? { beginAfterUserSilenceMs: built.beginAfterUserSilenceMs } : {}),
      scheduler: this.#d.scheduler,
      sampleRateHz: endpoint.sampleRate,
      // What the caller heard of a reply is read from the endpoint's played position where it has one.
      ...(endpoint.playedMs ? { playedMs: () => endpoint.playedMs?.() } : {}),
      ...(endpoint.outputLeadMs !== undefined ? { outputLeadMs: endpoint.outputLeadMs } : {}),
      ...(endpoint.maxInputLagMs !== undefined ? { maxInputLagMs: endpoint.maxInputLagMs } : {}),
      // A phone endpoint hands the call over when the engine transfers it (issue 24).
      ...(endpoint.transfer ? { transfer: (destination: string) => this.#transfer(destination) } : {}),
    });
    this.#pipeline = p;
    this.#recorder = new CallRecorder(this.#d.recordings.open(this.callId), endpoint.sampleRate);
    this.#wire(p);
    // The engine hears of the turn-taking it asked for (a custom LLM's update_only).
    const engine = built.engine;
    if (engine.agentStarted) p.on('agent_start_talking', this.guard('engine_agent_started', () => engine.agentStarted?.()));
    if (engine.userSpeaking) p.on('user_interim', this.guard('engine_user_speaking', ({ text }: { text: string }) => engine.userSpeaking?.(text)));

    const time = this.#d.scheduler;
    this.#conversation = new ConversationTimers(
      time,
      settings.end_call_after_silence_ms,
      remind && settings.reminder_max_count > 0 ? { afterMs: settings.reminder_trigger_ms, max: settings.reminder_max_count } : undefined,
      { inactive: () => void this.end('inactivity'), remind: () => remind?.() },
    );
    this.#timers.push(time.setTimeout(() => void this.end('max_duration_reached'), settings.max_call_duration_ms));
    this.#conversation.start();
    // A caller found silent is judged again once pending socket reads are in: after an event-loop
    // stall, Node runs due timers before it reads sockets, and their audio may be waiting there.
    const silentTooLong = () => time.now() - this.#lastAudioAt > this.#d.timings.audioTimeoutMs;
    const watchdog = time.setInterval(() => {
      if (silentTooLong()) time.setTimeout(() => silentTooLong() && void this.end('client_disconnected'), 0);
    }, Math.min(1_000, this.#d.timings.audioTimeoutMs));
    this.#timers.push(watchdog);

    this.#tell({
      type: 'started',
      callId: this.callId,
      agentId: this.#call.agent_id,
      agentVersion: this.#call.agent_version,
      agentName: settings.agent_name ?? this.#call.agent_name,
    });
    this.#lastAudioAt = this.#d.scheduler.now();
    await p.start();
  }

  #wire(pipeline: VoicePipeline): void {
    // A listener that throws ends this call (error_unknown) and never the pipeline loop that emitted it.
    const on = <K extends keyof PipelineEvents>(event: K, listener: PipelineEvents[K]) =>
      pipeline.on(event, this.guard(`pipeline_${event}`, listener as (...args: unknown[]) => void));
    on('agent_audio', (pcm) => {
      this.#recorder?.agent(pcm, this.#talkStartMs);
      this.#talkStartMs = undefined;
      this.#endpoint.playAudio(pcm);
    });
    // A backchannel's frames go to the recording's agent channel where it was said; it is no reply.
    on('backchannel', ({ atMs }) => {
      this.#talkStartMs = atMs;
      this.#backchannels += 1;
    });
    on('agent_start_talking', ({ atMs }) => {
      this.#conversation?.agentStarted();
      this.#utterance += 1;
      this.#talkStartMs = pipeline.elapsedMs();
      // The moves that led to this reply are placed at its start, before it (transcript.ts).
      this.#checkPosition(atMs);
      this.#tell({ type: 'agent_talking', utteranceId: this.#utteranceId() });
    });
    on('agent_stop_talking', ({ interrupted }) => {
      if (interrupted) this.#endpoint.clear();
      this.#tell({ type: 'agent_done', utteranceId: this.#utteranceId(), cutOff: interrupted });
      this.#conversation?.agentStopped(interrupted);
    });
    on('tool_call', (call) => {
      this.#nodes?.toolCallAt(call.atMs);
    });
    on('user_start_talking', () => {
      this.#conversation?.userStarted();
      void this.#variables.request();
    });
    on('audio_band', ({ band, highFraction }) => {
      if (band === 'wide') return;
      // A recogniser that hears this band poorly: say so where an operator looks (BENCHMARKS.md, "Recognition").
      const poor = this.#d.providers.stt.capabilities?.telephoneBand === 'poor';
      this.#d.log.warn(
        { band, highFraction, stt: this.#d.providers.stt.id },
        poor
          ? 'caller audio is telephone-band (nothing above 4 kHz): embedded recognition is unreliable on it; a hosted recogniser (STT_PROVIDER=deepgram or openai) hears it better'
          : 'caller audio is telephone-band (nothing above 4 kHz)',
      );
    });
    on('user_interim', ({ text }) => {
      this.#voicemail?.heard(text);
      this.#tell({ type: 'interim', lines: pipeline.transcript().map(toLine), text });
    });
    on('transcript_update', (utterances) => {
      const last = utterances.at(-1);
      if (last?.role === 'user') this.#voicemail?.heard(last.text);
      this.#tell({ type: 'transcript', lines: utterances.map(toLine) });
      this.#checkPosition();
      this.#checkpoint();
    });
    on('error', ({ reason, cause }) => {
      // The details (a provider's message may quote its upstream's answer) stay in the log, which
      // carries the call id; the caller gets the code and a fixed message.
      this.#d.log.warn({ reason, detail: describeFailure(cause) }, 'voice pipeline failed');
      this.#tell({ type: 'error', code: reason, message: failureMessage(reason) });
    });
    on('record_bound', ({ what }) => {
      this.#d.log.warn({ what }, 'call record reached its bound: later entries are not kept (docs/voice-pipeline.md, "What a call keeps")');
    });
    on('hangup', ({ reason, transferTo }) => {
      this.#checkPosition();
      void this.end(reason, transferTo === undefined ? {} : { transferredTo: transferTo });
    });
  }

  /** One event for the caller. An endpoint that throws is the call's failure, never the sender's. */
  #tell(event: CallEvent): void {
    this.guard(`endpoint_${event.type}`, () => this.#endpoint.send(event))();
  }

  /** A custom LLM's server failed: the call ends with Retell's reason (the detail stays in the log). */
  #engineFailed(reason: LlmWebsocketReason, detail: string): void {
    if (this.#ending) return;
    this.#d.log.warn({ reason, detail: detail.slice(0, 600) }, 'custom LLM connection failed');
    this.#d.customLlm?.failures?.inc({ reason });
    this.#tell({ type: 'error', code: reason, message: failureMessage(reason) });
    void this.end(reason);
  }

  /** The caller's audio: mono PCM at the endpoint's (the call's) rate. */
  #onAudio(pcm: Int16Array): void {
    if (this.#ending || !this.#pipeline) return;
    this.#lastAudioAt = this.#d.scheduler.now();
    this.#voicemail?.audio(pcm);
    const atMs = this.#pipeline.pushAudio(pcm);
    if (atMs !== undefined) this.#recorder?.user(pcm, atMs);
  }

  /** The endpoint cut the caller off for sending far faster than real time: the call ends `error_client_flood`. */
  #onFlood(): void {
    if (this.#ending) return;
    this.#d.log.warn('caller sent far faster than real time: call cut off');
    this.#tell({ type: 'error', code: 'error_client_flood', message: failureMessage('error_client_flood') });
    void this.end('error_client_flood');
  }

  /**
   * Ends the call once: stops the media, stores the results through the call lifecycle (which
   * applies the storage policy and emits call.finished), then has the endpoint tell the caller and
   * close (a phone's endpoint, `endsWithMedia`, as soon as the media has stopped). A later call
   * returns the first one's promise, its `options.deadline` still applying.
   */
  end(reason: DisconnectionReason, options: EndOptions = {}): Promise<void> {
    if (options.deadline !== undefined) this.#cutAnalysisBy(options.deadline);
    this.#ending ??= this.#finish(reason, reason === 'call_transfer' ? options.transferredTo : undefined)
      .catch((error: unknown) => {
        this.#d.log.error({ err: error }, 'call end failed');
      })
      .finally(() => this.#markDone());
    return this.#ending;
  }

  /**
   * The engine transfers the call (the pipeline asks once the agent's words have played): the
   * endpoint's carrier takes it, bounded by the endpoint. A refusal is logged and rejects: the
   * engine hears of it (a flow's failure edge) or the call ends `agent_hangup`.
   */
  async #transfer(destination: string): Promise<void> {
    this.#transferringTo = destination;
    try {
      if (!this.#endpoint.transfer) throw new Error('this call cannot be transferred');
      await this.#endpoint.transfer(destination);
    } catch (error) {
      this.#d.log.warn({ err: error, transport: this.#endpoint.transport }, 'transfer failed');
      throw error;
    } finally {
      this.#transferringTo = undefined;
    }
  }

  /**
   * The caller hung up or was lost. While a transfer is in flight, that is the carrier taking the
   * call on (the caller's phone leaves us for the new call: RFC 5589 6.1): the call ends `call_transfer`.
   */
  #callerLeft(reason: 'user_hangup' | 'client_disconnected'): Promise<void> {
    const destination = this.#transferringTo;
    return destination === undefined ? this.end(reason) : this.end('call_transfer', { transferredTo: destination });
  }

  async #finish(reason: DisconnectionReason, transferDestination?: string): Promise<void> {
    for (const t of this.#timers) this.#d.scheduler.clear(t);
    this.#conversation?.stop();
    const p = this.#pipeline;
    const elapsedMs = p?.elapsedMs() ?? 0;
    const endedAt = this.#d.scheduler.now();
    // A last move the caller was not told of yet (the call ended in the turn that made it).
    this.#checkPosition();
    const position = this.#nodes?.position() ?? null;
    this.#callOver.abort(new Error('the call ended'));
    this.#voicemail?.close();
    this.#closeEngine?.();
    await p?.close();
    // A phone is hung up now: its caller waits for nothing the analysis and storing give. When the
    // call ends on our side, what was sent ahead of real time is played first: an endpoint that
    // reports its played position waits for it itself (Twilio's last mark); for one that does not
    // (SIP, whose BYE would cut it), the session waits out the output lead and the phone's playout.
    if (this.#endpoint.endsWithMedia) {
      const callerLeft = reason === 'user_hangup' || reason === 'client_disconnected';
      const leadMs = (this.#endpoint.outputLeadMs ?? DEFAULT_OUTPUT_LEAD_MS) + (this.#endpoint.farEndPlayoutMs ?? 0);
      if (!callerLeft && p && !this.#endpoint.playedMs) await new Promise<void>((resolve) => this.#d.scheduler.setTimeout(() => resolve(), leadMs));
      this.#endEndpoint(reason);
    }
    let recordingPath: string | null = null;
    try {
      recordingPath = (await this.#recorder?.finish(elapsedMs)) ?? null;
    } catch (error) {
      this.#d.log.error({ err: error }, 'recording failed');
    }
    const outcome = this.#reachedEnd();
    // The LLM writes the analysis when there is one, unless it is what just failed.
    const llm = reason === 'error_llm' ? undefined : this.#d.providers.llm;
    const results = await callOutcome({
      reason,
      utterances: p?.transcript() ?? [],
      toolCalls: p?.toolCalls() ?? [],
      latencies: p?.latencies() ?? [],
      transitions: this.#nodes?.transitions ?? [],
      position,
      engineType: this.#engineType,
      retrievals: this.#retrievals.entries,
      outcome,
      recordingPath,
      ...(this.#voicemail ? { inVoicemail: reason === 'voicemail_reached' || this.#voicemail.inVoicemail === true } : {}),
      media: this.#endpoint.mediaStats?.() ?? null,
      ...(transferDestination === undefined ? {} : { transferDestination }),
      analysis: {
        customFields: effectiveSettings(this.#agent, this.#call.agent_override).post_call_analysis_data,
        ...(llm ? { llm } : {}),
        signal: AbortSignal.any([AbortSignal.timeout(this.#d.timings.analysisTimeoutMs), this.#analysisCut.signal]),
      },
    });
    this.#analysed = true;
    if (this.#analysisCutTimer) this.#d.scheduler.clear(this.#analysisCutTimer);
    if (llm && this.#analysisCut.signal.aborted) this.#d.log.info('post-call analysis cut short by the deadline; the embedded analysis is stored');
    this.#d.rememberNames?.(this.callId, outcome.names);
    try {
      await this.#d.calls.finishCall(this.callId, { ...results, endedMsAgo: this.#d.scheduler.now() - endedAt });
    } catch (error) {
      this.#d.log.error({ err: error }, 'storing the finished call failed');
    }
    this.#d.log.info({ reason, durationMs: Math.round(elapsedMs), preemptiveReplies: p?.preemptions(), backchannels: this.#backchannels, transport: this.#endpoint.transport }, 'call ended');
    this.#endEndpoint(reason);
  }

  /** Has the endpoint tell the caller how the call ended and close (idempotent, as `end` is). */
  #endEndpoint(reason: DisconnectionReason): void {
    const status = statusForReason(reason);
    this.guard('endpoint_end', () => this.#endpoint.end({ reason, status: status === 'error' ? 'error' : 'ended' }))();
  }

  /** Cuts the analysis off in time for the results to be stored by `deadline` (scheduler ms). */
  #cutAnalysisBy(deadline: number): void {
    if (this.#analysed) return;
    const now = this.#d.scheduler.now();
    const cutAt = deadline - Math.min(STORE_RESERVE_MS, Math.max(0, deadline - now) / 2);
    if (cutAt >= this.#analysisCutAt) return;
    this.#analysisCutAt = cutAt;
    if (this.#analysisCutTimer) this.#d.scheduler.clear(this.#analysisCutTimer);
    this.#analysisCutTimer = this.#d.scheduler.setTimeout(() => this.#analysisCut.abort(new Error('the call must be stored by its deadline')), Math.max(0, cutAt - now));
  }

  #checkpoint(): void {
    void this.#checkpoints.request();
  }

  #snapshot(): CallCheckpoint {
    const position = this.#nodes?.position() ?? null;
    const outcome = this.#reachedEnd();
    return {
      transcript_object: toTranscriptObject(this.#pipeline?.transcript() ?? []),
      current_node_id: this.#engineType === 'conversation_flow' ? position : null,
      current_state: this.#engineType === 'service_llm' ? position : null,
      node_transitions: [...(this.#nodes?.transitions ?? [])],
      reached_end: outcome.reachedEnd,
      names: outcome.names,
      sample_rate: this.#endpoint.sampleRate,
    };
  }

  #utteranceId(): string {
    return `utt_${this.#utterance}`;
  }

  /** Tells the caller of each node (or state) the agent moved to since last asked (node-path.ts); `atMs`: where the moves are placed (default: now). */
  #checkPosition(atMs?: number): void {
    this.#nodes?.check(atMs ?? this.#pipeline?.elapsedMs() ?? 0, (from, to) => this.#tell({ type: 'node_changed', from, to }));
  }

  /**
   * update-call changed the call (pushed by the server that took it; or notifications may have
   * been missed): its variables are read again and apply from the next turn.
   */
  onUpdated(source: 'pushed' | 'resync'): void {
    void this.#variables.request().then(() => this.#d.log.debug({ source }, 'call variables refreshed'));
  }
}

/** An utterance as the endpoint's events carry it. */
function toLine(u: Utterance): TranscriptLine {
  return { role: u.role, text: u.text, ...(u.cutOff ? { cutOff: true } : {}) };
}

function variablesOf(call: Call): CallVariables {
  return { dynamic: call.service_llm_dynamic_variables, overrides: call.override_dynamic_variables };
}
