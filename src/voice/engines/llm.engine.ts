import type { ChatTool, ChatToolCall, LlmProvider } from '../../providers/llm.ts';
import { type CustomFunction, type PressDigitTool, PRESS_DIGIT_PATTERN, type TransferCallTool } from '../../domain/custom-function.ts';
import { renderTemplate, resolveVariables } from './variables.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { languageInstruction } from './language.ts';
import { SPOKEN_STYLE } from './prompt.ts';
import { newLlmConversation, saveLlmConversation, type LlmConversation, type PendingRound } from './llm.conversation.ts';
import { NO_TURN_CONTEXT, turnReference, type ReferenceLookup, type TurnContextSource } from './context.ts';
import { mergePhrases, namesFromVariables } from './expected.ts';
import { callFunction, confirmedTurn } from './functions.ts';
import { abortable } from '../../lib/abortable.ts';
import {
  EngineError,
  type CallVariables,
  type EngineEnding,
  type EngineOutcome,
  type EngineOutput,
  type FunctionCaller,
  type FunctionOutcome,
  type ResponseEngine,
  type RespondOptions,
  type ServiceLlm,
  type ServiceLlmState,
} from './types.ts';

/**
 * LLM round trips allowed per user turn: state transitions re-prompt in the new state, function
 * results go back to the model. The last round offers no tools, so the model has to speak.
 */
export const MAX_ROUNDS_PER_TURN = 6;

export interface LlmEngineOptions {
  config: ServiceLlm;
  llm: LlmProvider;
  /** Call-level variables, read on every turn. */
  variables?: () => CallVariables;
  /** current_state of create-web-call; default config.starting_state, else the first state. */
  startState?: string;
  /** The agent's BCP-47 language: the system prompt tells the model to reply in it. */
  language?: string;
  /** Calls `general_tools` and `states[].tools`; without it, they fail as unavailable. */
  functions?: FunctionCaller;
  /** Reference material for every turn the model answers (context.ts); default NO_TURN_CONTEXT, none. */
  contextSource?: TurnContextSource;
  /** Monotonic milliseconds, for the timings reported (RespondOptions.onTiming); default performance.now(). */
  now?: () => number;
  /** The call can be transferred (a phone call): `transfer_call` tools are offered to the model; default false (they are not). */
  canTransfer?: boolean;
  /** Presses keys on the call (a phone call that can): `press_digit` tools are offered to the model; absent, they are not. */
  keypad?: (digits: string) => Promise<void>;
}

/** What end_call (or a transfer_call tool) asked for: the goodbye to say before hanging up ('' for none), and where the call goes. */
interface EndOfCall {
  goodbye: string;
  transferTo?: string;
}

/** Function names allow [A-Za-z0-9_-]{1,64}. */
export function transitionToolName(state: string): string {
  return `transition_to_${state.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

/**
 * Service-LLM engine: system prompt = general_prompt + the current state's state_prompt (both with
 * {{variables}}); the state's edges are tools `transition_to_<state>`, plus `end_call`.
 * `begin_message` opens the call ('' = wait for the user; absent = the LLM opens).
 */
export class LlmEngine implements ResponseEngine {
  readonly #config: ServiceLlm;
  readonly #llm: LlmProvider;
  readonly #callVariables: () => CallVariables;
  readonly #states: Map<string, ServiceLlmState>;
  readonly #language: string | undefined;
  readonly #functions: FunctionCaller | undefined;
  /** Everything a turn changes: a checkpoint copies it whole (llm.conversation.ts). */
  #conversation: LlmConversation;
  /** The turn being answered is confirmed once this resolves (a preemptive reply); undefined: it is. */
  #confirmed: Promise<void> | undefined;
  readonly #contextSource: TurnContextSource;
  readonly #now: () => number;
  readonly #canTransfer: boolean;
  readonly #keypad: ((digits: string) => Promise<void>) | undefined;

  constructor(options: LlmEngineOptions) {
    this.#canTransfer = options.canTransfer ?? false;
    this.#keypad = options.keypad;
    this.#language = options.language;
    this.#contextSource = options.contextSource ?? NO_TURN_CONTEXT;
    this.#now = options.now ?? (() => performance.now());
    this.#config = options.config;
    this.#llm = options.llm;
    this.#functions = options.functions;
    this.#callVariables = options.variables ?? (() => ({}));
    this.#states = new Map((options.config.states ?? []).map((s) => [s.name, s]));
    const start = options.startState ?? options.config.starting_state;
    if (start !== undefined && !this.#states.has(start)) throw new EngineError('error_config', `no state ${start}`);
    this.#conversation = newLlmConversation(start !== undefined ? this.#states.get(start) : options.config.states?.[0]);
  }

  /** The state the conversation is in. */
  get #state(): ServiceLlmState | undefined {
    return this.#conversation.current;
  }

  /** How the model ended the call. */
  get #ending(): EngineEnding | undefined {
    return this.#conversation.ending;
  }

  set #ending(ending: EngineEnding | undefined) {
    this.#conversation.ending = ending;
  }

  get currentState(): string | undefined {
    return this.#state?.name;
  }

  variables(): Record<string, string> {
    return resolveVariables(this.#config.default_dynamic_variables, this.#callVariables());
  }

  /** Names among the call's variables (an LLM's replies give no fixed words to expect). */
  expectedPhrases(): string[] {
    return mergePhrases(namesFromVariables(this.variables()));
  }

  outcome(): EngineOutcome {
    return { reachedEnd: this.#conversation.reachedEnd, ...(this.#ending ? { ending: this.#ending } : {}), variables: {}, names: [], ...(this.#state ? { position: this.#state.name } : {}) };
  }

  async *begin(signal: AbortSignal): AsyncIterable<EngineOutput> {
    this.#confirmed = undefined;
    const bm = this.#config.begin_message;
    if (bm !== undefined) {
      const text = renderTemplate(bm, this.variables()).trim();
      if (text) yield { type: 'text', text };
      return;
    }
    yield* this.#converse(turnReference(this.#contextSource, '', { now: this.#now }), signal);
  }

  async *respond(userText: string, signal: AbortSignal, options: RespondOptions = {}): AsyncIterable<EngineOutput> {
    this.#confirmed = options.confirmed;
    // The calls of a round the user cut short went on: their results come before the new words.
    if (this.#conversation.pending && (yield* this.#settle(this.#conversation.pending, signal))) return;
    this.#conversation.history.push({ role: 'user', content: userText });
    if (this.#conversation.reachedEnd) return;
    yield* this.#converse(turnReference(this.#contextSource, userText, { now: this.#now, onTiming: options.onTiming }), signal);
  }

  agentSpoke(text: string, cutOff: boolean): void {
    if (!text) return;
    this.#conversation.history.push({ role: 'assistant', content: cutOff ? `${text} [interrupted]` : text });
  }

  /** Saves a copy of the whole conversation; the function returned puts it back whole. */
  checkpoint(): () => void {
    const saved = saveLlmConversation(this.#conversation);
    return () => {
      this.#conversation = saveLlmConversation(saved);
      this.#confirmed = undefined;
    };
  }

  #systemPrompt(vars: Record<string, string>): string {
    return [
      renderTemplate(this.#config.general_prompt ?? '', vars),
      this.#state?.state_prompt ? renderTemplate(this.#state.state_prompt, vars) : '',
      SPOKEN_STYLE,
      this.#language ? languageInstruction(this.#language) : '',
    ]
      .filter(Boolean)
      .join('\n\n');
  }

  /** The custom functions the model may call now: `general_tools`, then the state's `tools`. */
  #functionsNow(): CustomFunction[] {
    return [...(this.#config.general_tools ?? []), ...(this.#state?.tools ?? [])].filter((t) => t.type === 'custom');
  }

  /** Retell's `press_digit` tools the model may call now (none unless the call can send keys). */
  #pressesNow(): PressDigitTool[] {
    if (!this.#keypad) return [];
    return [...(this.#config.general_tools ?? []), ...(this.#state?.tools ?? [])].filter((t) => t.type === 'press_digit');
  }

  /** Retell's `transfer_call` tools the model may call now (none unless the call can be transferred). */
  #transfersNow(): TransferCallTool[] {
    if (!this.#canTransfer) return [];
    return [...(this.#config.general_tools ?? []), ...(this.#state?.tools ?? [])].filter((t) => t.type === 'transfer_call');
  }

  /** Records how the model ended the call: only `goal_achieved: true` counts as a success. */
  #noteEnding(args: Record<string, unknown>): void {
    const achieved = args['goal_achieved'] === true;
    this.#ending = {
      via: 'end_call',
      successful: achieved,
      marked: false,
      detail: `end_call ${achieved ? 'with goal_achieved' : 'without goal_achieved'}${this.#state ? ` in state "${this.#state.name}"` : ''}`,
    };
  }

  /** The hang-up tool now: Retell's `end_call` tool when the LLM lists one (the state's first), else the built-in `end_call`. */
  #endCall(): { name: string; description: string } {
    const listed = [...(this.#state?.tools ?? []), ...(this.#config.general_tools ?? [])].find((t) => t.type === 'end_call');
    return { name: listed?.name ?? 'end_call', description: listed?.description ?? 'End the call once the conversation is complete or the user wants to hang up.' };
  }

  #tools(): ChatTool[] {
    const functions: ChatTool[] = this.#functionsNow().map((f) => ({
      name: f.name,
      ...(f.description ? { description: f.description } : {}),
      parameters: f.parameters ?? { type: 'object', properties: {} },
      ...(this.#config.tool_call_strict_mode ? { strict: true } : {}),
    }));
    const tools: ChatTool[] = (this.#state?.edges ?? []).map((e) => ({
      name: transitionToolName(e.destination_state_name),
      description: e.description ?? `Move the conversation to the ${e.destination_state_name} state.`,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    }));
    tools.push({
      ...this.#endCall(),
      parameters: {
        type: 'object',
        properties: {
          message: { type: 'string', description: 'A short goodbye to say before hanging up.' },
          goal_achieved: { type: 'boolean', description: 'Whether the goal of the call was achieved (false when the user gives up, or you could not help).' },
        },
        additionalProperties: false,
      },
    });
    const transfers: ChatTool[] = this.#transfersNow().map((t) => ({
      name: t.name,
      description: t.description ?? 'Transfer the call to a person.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    }));
    const presses: ChatTool[] = this.#pressesNow().map((t) => ({
      name: t.name,
      description: t.description ?? 'Press keys on the phone keypad, to navigate an automated phone menu (IVR).',
      parameters: {
        type: 'object',
        properties: { digit: { type: 'string', pattern: PRESS_DIGIT_PATTERN, description: 'The keys to press, in order: 0-9, *, #.' } },
        required: ['digit'],
        additionalProperties: false,
      },
    }));
    return [...tools, ...transfers, ...presses, ...functions];
  }

  /** The model's answer to the turn: up to MAX_ROUNDS_PER_TURN requests, each with the reference material `lookup` finds for it. */
  async *#converse(lookup: ReferenceLookup, signal: AbortSignal): AsyncIterable<EngineOutput> {
    const reference = await lookup(this.#conversation.history, signal);
    for (let round = 0; round < MAX_ROUNDS_PER_TURN; round++) {
      const vars = this.variables();
      const calls: ChatToolCall[] = [];
      let spoke = false;
      const lastRound = round === MAX_ROUNDS_PER_TURN - 1;
      try {
        for await (const d of this.#llm.chat({
          messages: [{ role: 'system', content: this.#systemPrompt(vars) }, ...reference, ...this.#conversation.history],
          ...(lastRound ? {} : { tools: this.#tools() }),
          ...(this.#config.model ? { model: this.#config.model } : {}),
          ...(this.#config.model_temperature !== undefined ? { temperature: this.#config.model_temperature } : {}),
          signal,
        })) {
          if (d.type === 'text' && d.text) {
            spoke = true;
            yield { type: 'text', text: d.text };
          } else if (d.type === 'tool_call') calls.push(d.call);
        }
      } catch (e) {
        if (signal.aborted) throw e;
        throw new EngineError('error_llm', 'LLM request failed', e);
      }
      if (calls.length === 0) return;
      const functions = this.#functionsNow();
      if (calls.some((c) => functions.some((f) => f.name === c.name))) {
        const speakAfter = yield* this.#runFunctions(calls, functions, spoke, signal);
        if (this.#conversation.reachedEnd) return;
        if (!speakAfter) return;
        continue;
      }
      const pressed = yield* this.#pressDigits(calls, signal);
      const applied = this.#applyRound(calls, pressed);
      // After keys are pressed the model hears what the menu says next: it answers that turn.
      if (pressed.size > 0 && !applied.end) return;
      if (applied.end) {
        yield* this.#hangUp(applied.end);
        return;
      }
      // After a transition the model speaks in the new state, unless it already spoke this turn.
      if (spoke && applied.moved) return;
    }
  }

  /**
   * One round of tool calls that includes custom functions: the side effect of this engine, run
   * once per round the model asks for. Says the filler of the first function that wants one
   * (unless the model already spoke), records each invocation, runs the functions at once, and
   * once all are in adds the round to the history (transitions and end_call are applied as in a
   * round without functions) and records the results. A barge-in stops the wait, not the
   * requests: the next turn settles the round first. Returns whether the model should speak
   * after (false when every function called has `speak_after_execution: false`).
   */
  async *#runFunctions(calls: ChatToolCall[], functions: CustomFunction[], spoke: boolean, signal: AbortSignal): AsyncGenerator<EngineOutput, boolean> {
    const byName = new Map(functions.map((f) => [f.name, f]));
    const called = calls.flatMap((c) => {
      const fn = byName.get(c.name);
      return fn ? [{ call: c, fn }] : [];
    });
    const filler = called.find((c) => c.fn.speak_during_execution)?.fn.execution_message_description?.trim();
    if (filler && !spoke) yield { type: 'text', text: renderTemplate(filler, this.variables()) };
    await confirmedTurn(this.#confirmed, signal);
    for (const { call } of called) yield { type: 'tool_call_invocation', tool_call_id: call.id, name: call.name, arguments: call.arguments || '{}' };
    const results = Promise.all(called.map(({ call, fn }) => this.#call(fn, call.arguments).then((o) => [call.id, o] as const))).then((list) => new Map(list));
    // The calls run at once: the reply waits for the longest (counted once, on the first result).
    const records = results.then((outcomes) => {
      const longest = Math.max(0, ...[...outcomes.values()].map((o) => o.durationMs));
      return called.map(({ call }, i): EngineOutput => ({
        type: 'tool_call_result',
        tool_call_id: call.id,
        content: outcomes.get(call.id)?.content ?? '',
        ...(i === 0 ? { delayMs: longest } : {}),
      }));
    });
    this.#conversation.pending = { calls, results, records };
    const ended = yield* this.#settle(this.#conversation.pending, signal);
    if (ended) return false;
    return called.some(({ fn }) => fn.speak_after_execution !== false) || called.length < calls.length;
  }

  /** Waits (abortably) for a pending round, applies it (#applyRound) and records its results; true when it ended the call. */
  async *#settle(pending: PendingRound, signal: AbortSignal): AsyncGenerator<EngineOutput, boolean> {
    const [results, records] = await abortable(Promise.all([pending.results, pending.records]), signal);
    this.#conversation.pending = undefined;
    // The round's transitions and end_call apply now, in the turn that takes its results.
    const applied = this.#applyRound(pending.calls, results);
    yield* records;
    if (!applied.end) return false;
    yield* this.#hangUp(applied.end);
    return true;
  }

  /**
   * Applies a round of tool calls, with or without functions (their `results` are in): the
   * assistant's calls and a result for each go to the history, transitions move the conversation
   * to their state, and end_call records how the call ended (once per call: the first end_call
   * decides, `goal_achieved` its success) and asks for the hang-up (#hangUp).
   */
  #applyRound(calls: ChatToolCall[], results: ReadonlyMap<string, FunctionOutcome>): { moved: boolean; end: EndOfCall | undefined } {
    const history = this.#conversation.history;
    history.push({ role: 'assistant', content: null, tool_calls: calls });
    let moved = false;
    let end: EndOfCall | undefined;
    for (const call of calls) {
      const result = results.get(call.id);
      if (result) {
        history.push({ role: 'tool', tool_call_id: call.id, content: result.content });
        continue;
      }
      if (call.name === this.#endCall().name) {
        const args = parseArgs(call.arguments);
        if (!this.#ending) this.#noteEnding(args);
        const goodbye = args['message'];
        end ??= { goodbye: typeof goodbye === 'string' ? goodbye.trim() : '' };
        history.push({ role: 'tool', tool_call_id: call.id, content: 'call ended' });
        continue;
      }
      const transfer = this.#transfersNow().find((t) => t.name === call.name);
      if (transfer) {
        const message = transfer.speak_during_execution ? renderTemplate(transfer.execution_message_description ?? '', this.variables()).trim() : '';
        end ??= { goodbye: message, transferTo: transfer.transfer_destination.number };
        history.push({ role: 'tool', tool_call_id: call.id, content: 'call transferred' });
        continue;
      }
      const dest = (this.#state?.edges ?? []).find((e) => transitionToolName(e.destination_state_name) === call.name);
      const next = dest ? this.#states.get(dest.destination_state_name) : undefined;
      if (next) {
        this.#conversation.current = next;
        moved = true;
      }
      history.push({ role: 'tool', tool_call_id: call.id, content: next ? `now in state ${next.name}` : 'unknown tool' });
    }
    return { moved, end };
  }

  /**
   * The round's press_digit calls: each presses its keys on the call (in order, once the turn is
   * confirmed), recorded as a tool call; returns their results for the history (a bad key or a
   * call that could not send them is an error the model reads).
   */
  async *#pressDigits(calls: ChatToolCall[], signal: AbortSignal): AsyncGenerator<EngineOutput, Map<string, FunctionOutcome>> {
    const results = new Map<string, FunctionOutcome>();
    const keypad = this.#keypad;
    const presses = this.#pressesNow();
    const mine = calls.filter((c) => presses.some((p) => p.name === c.name));
    if (!keypad || mine.length === 0) return results;
    await confirmedTurn(this.#confirmed, signal);
    for (const call of mine) {
      const digit = parseArgs(call.arguments)['digit'];
      yield { type: 'tool_call_invocation', tool_call_id: call.id, name: call.name, arguments: call.arguments || '{}' };
      const started = this.#now();
      let outcome: FunctionOutcome;
      if (typeof digit !== 'string' || !new RegExp(PRESS_DIGIT_PATTERN).test(digit)) {
        outcome = { ok: false, content: 'error: digit must be 1 to 32 keys of 0-9, *, #, A-D', error: 'invalid_arguments', durationMs: 0 };
      } else {
        try {
          await keypad(digit);
          outcome = { ok: true, content: `pressed ${digit}`, durationMs: Math.round(this.#now() - started) };
        } catch (error) {
          outcome = { ok: false, content: `error: the keys could not be pressed (${(error as Error).message})`, error: 'press_failed', durationMs: Math.round(this.#now() - started) };
        }
      }
      results.set(call.id, outcome);
      yield { type: 'tool_call_result', tool_call_id: call.id, content: outcome.content };
    }
    return results;
  }

  /** The end of the call that end_call (or a transfer) asked for: its goodbye, if any, then the hang-up or the transfer. */
  *#hangUp(end: EndOfCall): Generator<EngineOutput> {
    if (end.goodbye) yield { type: 'text', text: end.goodbye };
    this.#conversation.reachedEnd = true;
    yield end.transferTo === undefined ? { type: 'hangup', reason: 'agent_hangup' } : { type: 'hangup', reason: 'call_transfer', destination: end.transferTo };
  }

  /** Calls one function with the model's arguments (JSON text); arguments that are not a JSON object are an error for the model. */
  #call(fn: CustomFunction, argumentsJson: string): Promise<FunctionOutcome> {
    const parsed = parseBoundedJson(argumentsJson || '{}');
    const args = parsed.ok ? parsed.value : undefined;
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return Promise.resolve({ ok: false, content: 'error: the arguments are not a JSON object', error: 'invalid_arguments', durationMs: 0 });
    }
    return callFunction(this.#functions, fn, args as Record<string, unknown>);
  }
}

/** The model's arguments as an object ({} when they are not one); bounded like any peer's JSON. */
function parseArgs(json: string): Record<string, unknown> {
  const parsed = parseBoundedJson(json || '{}');
  const v = parsed.ok ? parsed.value : undefined;
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
