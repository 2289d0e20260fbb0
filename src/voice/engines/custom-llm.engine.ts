/**
 * A custom LLM: the user's own server drives the conversation over Retell's LLM WebSocket
 * protocol (docs/custom-llm.md). The engine speaks the protocol over an injected socket (the
 * media side opens it through the webhook destination policy); it never sees the network.
 */
import type { TimerHandle } from '../../lib/scheduler.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { ToolCallBudget } from '../record-bounds.ts';
import type { EngineOutcome, EngineOutput, RespondOptions, ResponseEngine, ToolCallRecord } from './types.ts';
import { knowledgeBaseChunks, type KnowledgeBaseChunk } from './custom-llm.knowledge.ts';
import { ResponseStream, applyContent, isRecord, recordOnly, toolRecord } from './custom-llm.stream.ts';
import { CANNOT_TRANSFER } from './flow.phone.ts';
import { LlmTranscript } from './custom-llm.transcript.ts';
import { BEGIN_WAIT_MS, HOLD_ON_TEXT, MAX_PENDING_INTERRUPTS, PING_INTERVAL_MS, PING_TIMEOUT_MS, RECONNECT_ATTEMPTS_PER_CALL, RECONNECT_BUDGET_MS, reconnectDelayMs } from './custom-llm.settings.ts';
import type { CustomLlmEngineOptions, LlmSocket, LlmSocketEnd, LlmWebsocketReason } from './custom-llm.settings.ts';

export * from './custom-llm.settings.ts';

/** The engine of a `custom_llm` agent (Retell's LLM WebSocket protocol; docs/custom-llm.md). */
export class CustomLlmEngine implements ResponseEngine {
  readonly #o: CustomLlmEngineOptions;
  readonly #transcript = new LlmTranscript();
  /** The server's config asked for `transcript_with_tool_calls`. */
  #withTools = false;
  /** The live partial of the user's utterance last sent in an update_only. */
  #partial = '';
  /** The stream the pipeline read last: the reply playing, whose no_interruption_allowed holds. */
  #speaking: ResponseStream | undefined;
  #socket: LlmSocket | undefined;
  #opening: Promise<boolean> | undefined;
  #failed = false;
  #closed = false;
  #responseId = 0;
  #current: ResponseStream;
  /** Tool-call records that arrived between responses: placed at the start of the next one. */
  #pendingTools: ToolCallRecord[] = [];
  #autoReconnect = false;
  #pingTimer: TimerHandle | undefined;
  #lastHeard = 0;
  #reconnecting = false;
  /** Reconnection attempts made in this call (RECONNECT_ATTEMPTS_PER_CALL). */
  #reconnectAttempts = 0;
  /** The wait before the next reconnection attempt, and how to end it early (close()). */
  #backoff: { timer: TimerHandle; wake: () => void } | undefined;
  /** HOLD_ON_TEXT was said during the current loss. */
  #heldOn = false;
  /** The records this engine keeps queued are bounded like those the call keeps. */
  readonly #toolBudget = new ToolCallBudget();
  #endCall = false;
  /** transfer_number records so far (ids), and the one the carrier has not answered yet. */
  #transfers = 0;
  #transferring: string | undefined;
  /** agent_interrupt streams by interrupt_id, and those not spoken yet, in order. */
  readonly #interrupts = new Map<number, ResponseStream>();
  /** The highest interrupt_id spoken (or cut off): later frames of it, or of lower ids, are stale. */
  #lastInterruptDone = -1;
  /** The last response_required or reminder_required: sent again after a reconnection if still unanswered. */
  #lastRequest: Record<string, unknown> | undefined;
  readonly #unprompted: ResponseStream[] = [];
  /** The chunks found for the caller's last turn (knowledge_base_chunks), with an agent that has knowledge bases. */
  #chunks: KnowledgeBaseChunk[] = [];

  constructor(options: CustomLlmEngineOptions) {
    this.#o = options;
    this.#current = new ResponseStream(0);
  }

  /** Opens the socket and speaks the begin message (response_id 0) if the server sends one in time. */
  async *begin(signal: AbortSignal): AsyncIterable<EngineOutput> {
    if (!(await this.#ensureOpen())) return;
    yield* this.#stream(this.#current, signal, BEGIN_WAIT_MS);
  }

  async *respond(userText: string, signal: AbortSignal, options: RespondOptions = {}): AsyncIterable<EngineOutput> {
    if (!(await this.#ensureOpen())) return;
    this.#transcript.user(userText, options.words);
    this.#partial = '';
    const source = this.#o.contextSource;
    if (source) {
      const timing = { now: this.#o.now ?? (() => performance.now()), onTiming: options.onTiming };
      this.#chunks = await knowledgeBaseChunks(source, userText, this.#transcript.fields(false).transcript, timing, signal);
    }
    this.#current = new ResponseStream(++this.#responseId);
    this.#request({ interaction_type: 'response_required', response_id: this.#current.id, ...this.#transcript.fields(this.#withTools), ...this.#knowledge() });
    // Asked while the service reconnects: the request goes to the new connection (#reconnect).
    if (this.#reconnecting) this.#holdOn();
    yield* this.#stream(this.#current, signal, undefined);
  }

  /**
   * The user has been silent since the agent spoke (the agent's reminder_trigger_ms): asks the
   * server for a reminder (`reminder_required` with the next response_id); its response is spoken
   * as unprompted speech.
   */
  remind(): void {
    if (!this.#socket || this.#failed || this.#closed) return;
    this.#current = new ResponseStream(++this.#responseId);
    this.#unprompted.push(this.#current);
    this.#request({ interaction_type: 'reminder_required', response_id: this.#current.id, ...this.#transcript.fields(this.#withTools), ...this.#knowledge() });
    this.#o.onUnprompted?.();
  }

  /** Speaks the oldest agent_interrupt (or reminder response) not spoken yet. */
  async *unprompted(signal: AbortSignal): AsyncIterable<EngineOutput> {
    const stream = this.#unprompted.shift();
    if (stream) yield* this.#stream(stream, signal, undefined);
  }

  agentSpoke(text: string, cutOff: boolean): void {
    this.#transcript.agent(text);
    this.#send({ interaction_type: 'update_only', ...this.#transcript.fields(this.#withTools), turntaking: 'user_turn', ...(cutOff ? { agent_cut_off: true } : {}) });
  }

  /** The agent started speaking a reply: update_only with `turntaking: "agent_turn"`. */
  agentStarted(): void {
    this.#send({ interaction_type: 'update_only', ...this.#transcript.fields(this.#withTools), turntaking: 'agent_turn' });
  }

  /** A live partial of the user's utterance (the recogniser's interim): update_only with it as the last user entry. */
  userSpeaking(text: string): void {
    if (text === this.#partial) return;
    this.#partial = text;
    this.#send({ interaction_type: 'update_only', ...this.#transcript.fields(this.#withTools, text) });
  }

  /** The extension field of a request: the last turn's chunks, with an agent that has knowledge bases ({} without). */
  #knowledge(): { knowledge_base_chunks?: KnowledgeBaseChunk[] } {
    return this.#o.contextSource ? { knowledge_base_chunks: this.#chunks } : {};
  }

  /** False while the reply playing is one the server sent with `no_interruption_allowed`. */
  interruptible(): boolean {
    return this.#speaking?.noInterruption !== true;
  }

  /** The server's end_call ends the conversation; it says nothing of the call's goal, so the analysis judges that. */
  outcome(): EngineOutcome {
    const ending = { via: 'end_call', successful: false, detail: "end_call from the custom LLM's server (it does not say whether the goal was achieved)", marked: false } as const;
    return { reachedEnd: this.#endCall, ...(this.#endCall ? { ending } : {}), variables: {}, names: [] };
  }

  /** A response's `transfer_number`, after its words: recorded, then the transfer; a web call says why and goes on. */
  *#transfer(number: string): Iterable<EngineOutput> {
    const id = `transfer_call_${++this.#transfers}`;
    yield { type: 'tool_call_invocation', tool_call_id: id, name: 'transfer_call', arguments: JSON.stringify({ number }) };
    if (!this.#o.canTransfer) return yield { type: 'tool_call_result', tool_call_id: id, content: CANNOT_TRANSFER };
    this.#endCall = true;
    this.#transferring = id;
    yield { type: 'hangup', reason: 'call_transfer', destination: number };
  }

  /** The carrier refused the transfer: the record says why (spoken as unprompted output) and the call goes on. */
  transferFailed(_destination: string, why: string): boolean {
    const id = this.#transferring;
    if (id === undefined) return false;
    this.#transferring = undefined;
    this.#endCall = false;
    this.#unprompted.push(recordOnly({ type: 'tool_call_result', tool_call_id: id, content: `error: the transfer failed (${why})` }));
    return true;
  }

  /** Closes the socket (the call ended); idempotent. */
  close(): void {
    this.#closed = true;
    if (this.#pingTimer) this.#o.scheduler.clear(this.#pingTimer);
    if (this.#backoff) {
      this.#o.scheduler.clear(this.#backoff.timer);
      this.#backoff.wake();
    }
    this.#socket?.close();
    this.#socket = undefined;
    this.#current.wake?.();
  }

  /** Streams the items of `stream` until its response is complete, the signal aborts or `waitMs` passes with nothing. */
  async *#stream(stream: ResponseStream, signal: AbortSignal, waitMs: number | undefined): AsyncIterable<EngineOutput> {
    this.#speaking = stream;
    const tools = this.#pendingTools.splice(0);
    for (const record of tools) yield record;
    let timer: TimerHandle | undefined;
    let timedOut = false;
    if (waitMs !== undefined) {
      timer = this.#o.scheduler.setTimeout(() => {
        timedOut = true;
        stream.wake?.();
      }, waitMs);
    }
    const onAbort = () => stream.wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      for (;;) {
        if (signal.aborted || this.#failed || this.#closed) return;
        const item = stream.items.shift();
        if (!item) {
          if (timedOut) return;
          await new Promise<void>((resolve) => (stream.wake = resolve));
          stream.wake = undefined;
          continue;
        }
        if (timer) {
          this.#o.scheduler.clear(timer);
          timer = undefined;
        }
        if (item.kind === 'text') yield { type: 'text', text: item.text };
        else if (item.kind === 'tool') yield item.record;
        else {
          if (item.transferTo !== undefined) yield* this.#transfer(item.transferTo);
          else if (item.endCall) {
            this.#endCall = true;
            yield { type: 'hangup', reason: 'agent_hangup' };
          }
          return;
        }
      }
    } finally {
      stream.finished = true;
      if (this.#interrupts.get(stream.id) === stream) {
        this.#interrupts.delete(stream.id);
        this.#lastInterruptDone = Math.max(this.#lastInterruptDone, stream.id);
      }
      if (timer) this.#o.scheduler.clear(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  #ensureOpen(): Promise<boolean> {
    this.#opening ??= this.#connect().then(
      () => true,
      (error: unknown) => {
        this.#fail('error_llm_websocket_open', error instanceof Error ? error.message : String(error));
        return false;
      },
    );
    return this.#opening;
  }

  async #connect(): Promise<void> {
    const url = `${this.#o.url.replace(/\/+$/, '')}/${encodeURIComponent(this.#o.callId)}`;
    // Frames can arrive before the opener's promise settles: they wait for the socket (a config may need to answer).
    let early: string[] | undefined = [];
    const socket = await this.#o.open(url, {
      onMessage: (text) => (early ? early.push(text) : this.#onMessage(text)),
      onClose: (end, detail) => this.#onClose(end, detail),
    });
    if (this.#closed || this.#failed) {
      socket.close();
      return;
    }
    this.#socket = socket;
    this.#lastHeard = this.#o.scheduler.now();
    const queued = early;
    early = undefined;
    for (const text of queued) this.#onMessage(text);
  }

  #onClose(end: LlmSocketEnd, detail: string): void {
    this.#socket = undefined;
    if (this.#closed || this.#failed) return;
    if (end === 'corrupt') return this.#fail('error_llm_websocket_corrupt_payload', detail);
    if (end === 'runtime') return this.#fail('error_llm_websocket_runtime', detail);
    if (this.#autoReconnect) void this.#reconnect(detail);
    else this.#fail('error_llm_websocket_lost_connection', detail);
  }

  /**
   * auto_reconnect: dials again with backoff and jitter (reconnectDelayMs) within RECONNECT_BUDGET_MS
   * of the loss, and within the call's RECONNECT_ATTEMPTS_PER_CALL; a caller waiting for an answer
   * meanwhile hears HOLD_ON_TEXT. The new connection gets the request the lost one left unanswered,
   * and its config may ask for call_details again.
   */
  async #reconnect(detail: string): Promise<void> {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    this.#heldOn = false;
    const lostAt = this.#o.scheduler.now();
    const random = this.#o.random ?? Math.random;
    let last = detail;
    for (let attempt = 0; !this.#closed && !this.#failed; attempt++) {
      if (this.#reconnectAttempts >= RECONNECT_ATTEMPTS_PER_CALL) {
        last = `${RECONNECT_ATTEMPTS_PER_CALL} reconnection attempts in this call already (the server keeps dropping the connection); last: ${last}`;
        break;
      }
      const delayMs = reconnectDelayMs(attempt, random());
      if (this.#o.scheduler.now() + delayMs - lostAt > RECONNECT_BUDGET_MS) {
        last = `no connection within ${RECONNECT_BUDGET_MS} ms (${attempt} attempts); last: ${last}`;
        break;
      }
      await this.#wait(delayMs);
      if (this.#closed || this.#failed) break;
      this.#reconnectAttempts += 1;
      try {
        await this.#connect();
        this.#reconnecting = false;
        // A request the lost connection did not answer goes to the new one.
        const current = this.#current;
        if (this.#lastRequest && !current.complete && !current.finished && this.#lastRequest.response_id === current.id) this.#send(this.#lastRequest);
        return;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
        this.#holdOn();
      }
    }
    this.#reconnecting = false;
    this.#fail('error_llm_websocket_lost_connection', `reconnection failed: ${last}`);
  }

  /** Waits `ms` on the scheduler; close() ends the wait early. */
  #wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        this.#backoff = undefined;
        resolve();
      };
      this.#backoff = { timer: this.#o.scheduler.setTimeout(wake, ms), wake };
    });
  }

  /**
   * Once per loss, when the caller is waiting for an answer (a response is being streamed and not
   * complete), the answer starts with HOLD_ON_TEXT; the server's answer follows it when it comes.
   */
  #holdOn(): void {
    const current = this.#current;
    if (this.#heldOn || current.complete || current.finished) return;
    if (this.#lastRequest?.response_id !== current.id) return;
    this.#heldOn = true;
    current.push({ kind: 'text', text: `${HOLD_ON_TEXT} ` });
  }

  #onMessage(text: string): void {
    if (this.#failed || this.#closed) return;
    this.#lastHeard = this.#o.scheduler.now();
    const parsed = parseBoundedJson(text);
    if (!parsed.ok) return this.#fail('error_llm_websocket_corrupt_payload', `a frame ${parsed.problem}`);
    let problem: string | null;
    try {
      problem = this.#handle(parsed.value);
    } catch (error) {
      // Whatever the server sent that this engine failed on is the server's payload: the call ends
      // with its reason, never the process (the detail goes to the log).
      problem = `a frame could not be handled (${error instanceof Error ? error.message : String(error)})`;
    }
    if (problem) this.#fail('error_llm_websocket_corrupt_payload', problem);
  }

  /** Applies one event from the server; returns why it breaks the protocol, or null. */
  #handle(event: unknown): string | null {
    if (!isRecord(event) || typeof event.response_type !== 'string') return 'a frame is not an object with a response_type';
    switch (event.response_type) {
      case 'config': {
        const config = isRecord(event.config) ? event.config : {};
        if (config.transcript_with_tool_calls === true) this.#withTools = true;
        if (config.call_details === true) this.#send({ interaction_type: 'call_details', call: this.#o.callDetails() });
        if (config.auto_reconnect === true && !this.#autoReconnect) {
          this.#autoReconnect = true;
          this.#startPing();
        }
        return null;
      }
      case 'response': {
        const id = event.response_id;
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return 'a response without an integer response_id';
        // A stale response (the user spoke again since) is ignored.
        if (id !== this.#current.id) return null;
        return applyContent(this.#current, event, 'a response');
      }
      case 'tool_call_invocation':
      case 'tool_call_result': {
        const record = toolRecord(event);
        if (typeof record === 'string') return record;
        this.#tool(record);
        return null;
      }
      case 'agent_interrupt': {
        const id = event.interrupt_id;
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return 'an agent_interrupt without an integer interrupt_id';
        if (id <= this.#lastInterruptDone) return null;
        let stream = this.#interrupts.get(id);
        if (!stream) {
          if (this.#unprompted.length >= MAX_PENDING_INTERRUPTS) return `more than ${MAX_PENDING_INTERRUPTS} agent_interrupt waiting to be spoken`;
          stream = new ResponseStream(id);
          this.#interrupts.set(id, stream);
          this.#unprompted.push(stream);
          this.#o.onUnprompted?.();
        }
        if (stream.complete) return null;
        return applyContent(stream, event, 'an agent_interrupt');
      }
      case 'metadata':
        this.#o.onMetadata?.(event.metadata ?? null);
        return null;
      case 'ping_pong':
      case 'update_agent':
        // Liveness is counted on every frame; update_agent is accepted and not acted on
        // (docs/custom-llm.md, "What is not implemented").
        return null;
      default:
        return `an unknown response_type "${event.response_type.slice(0, 40)}"`;
    }
  }

  /** A tool-call record joins the response being streamed, or the next one when none is; past the call's budget it is dropped. */
  #tool(received: ToolCallRecord): void {
    const record = this.#toolBudget.admit(received);
    if (!record) return;
    this.#transcript.tool(record);
    const stream = this.#current;
    if (!stream.complete && !stream.finished) stream.push({ kind: 'tool', record });
    else this.#pendingTools.push(record);
  }

  #startPing(): void {
    this.#pingTimer = this.#o.scheduler.setInterval(() => {
      if (!this.#socket) return;
      if (this.#o.scheduler.now() - this.#lastHeard > PING_TIMEOUT_MS) {
        const socket = this.#socket;
        this.#socket = undefined;
        socket.close();
        void this.#reconnect(`no message for ${PING_TIMEOUT_MS} ms`);
        return;
      }
      this.#send({ interaction_type: 'ping_pong', timestamp: Date.now() });
    }, PING_INTERVAL_MS);
  }

  #request(event: Record<string, unknown>): void {
    this.#lastRequest = event;
    this.#send(event);
  }

  #send(event: Record<string, unknown>): void {
    try {
      this.#socket?.send(JSON.stringify(event));
    } catch (error) {
      this.#onClose('lost', error instanceof Error ? error.message : String(error));
    }
  }

  #fail(reason: LlmWebsocketReason, detail: string): void {
    if (this.#failed || this.#closed) return;
    this.#failed = true;
    if (this.#pingTimer) this.#o.scheduler.clear(this.#pingTimer);
    this.#socket?.close();
    this.#socket = undefined;
    this.#current.wake?.();
    this.#o.onFailure(reason, detail);
  }
}
