/**
 * What a simulated call's engine is given instead of the account's backends: mocked custom
 * functions (tool_mocks), and leads and tickets kept in the run (never in the account's lists).
 */
import type { SimulatedToolCall, ToolMock } from '../../domain/agent-test.ts';
import type { CustomFunction } from '../../domain/custom-function.ts';
import { FUNCTION_RESULT_MAX_CHARS } from '../../domain/custom-function.ts';
import type { Scheduler } from '../../lib/scheduler.ts';
import { realScheduler } from '../../lib/scheduler.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import type { EngineOutput, FlowTools, FunctionCaller, FunctionOutcome } from '../../voice/index.ts';

/** A function call an engine reports rather than asks for (a custom LLM's tool_call_invocation / tool_call_result). */
type ToolCallRecord = Extract<EngineOutput, { type: 'tool_call_invocation' | 'tool_call_result' }>;

/** Most function calls, leads or tickets one simulated call keeps. */
const MAX_RECORDED = 200;

/**
 * The functions of a simulated call: a mocked one answers its mock (its `delay_ms` is counted,
 * not waited, unless `waitDelays`: then waited on `scheduler`, the call's clock); any other goes to `real` when the case allows it, else is
 * refused (the engine sees an error, as when a backend refuses).
 */
export class MockedFunctions implements FunctionCaller {
  readonly calls: SimulatedToolCall[] = [];
  /** Mocked delays of the requests of the turn being played, ms (the turn's latency gains them). */
  pendingDelayMs = 0;
  readonly #mocks: Readonly<Record<string, ToolMock>>;
  readonly #real: FunctionCaller | undefined;
  readonly #waitDelays: boolean;
  readonly #time: Scheduler;
  /** Calls a custom LLM's server reported, by tool_call_id, waiting for their results. */
  readonly #reported = new Map<string, SimulatedToolCall>();

  constructor(mocks: Readonly<Record<string, ToolMock>>, real: FunctionCaller | undefined, options: { waitDelays?: boolean; scheduler?: Scheduler } = {}) {
    this.#mocks = mocks;
    this.#real = real;
    this.#waitDelays = options.waitDelays ?? false;
    this.#time = options.scheduler ?? realScheduler;
  }

  async call(fn: CustomFunction, args: Record<string, unknown>, signal?: AbortSignal): Promise<FunctionOutcome> {
    const mock = Object.hasOwn(this.#mocks, fn.name) ? this.#mocks[fn.name] : undefined;
    let outcome: FunctionOutcome;
    if (mock) outcome = await this.#answer(mock, signal);
    else if (this.#real) outcome = await this.#real.call(fn, args, signal);
    else outcome = { ok: false, content: `error: function ${fn.name} is not mocked in this test, and the case does not allow unmocked functions`, error: 'refused', durationMs: 0 };
    if (this.calls.length < MAX_RECORDED) this.calls.push({ name: fn.name, arguments: args, result: outcome.content, mocked: mock !== undefined, ok: outcome.ok });
    return outcome;
  }

  /**
   * A function a custom LLM's server ran itself and reported (tool_call_invocation, then
   * tool_call_result): recorded as a call, never mocked (it does not go through this server).
   */
  reported(record: ToolCallRecord): void {
    if (record.type === 'tool_call_result') {
      const call = this.#reported.get(record.tool_call_id);
      if (call) call.result = record.content;
      this.#reported.delete(record.tool_call_id);
      return;
    }
    const parsed = parseBoundedJson(record.arguments || '{}', { maxChars: FUNCTION_RESULT_MAX_CHARS });
    const args = parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value) ? (parsed.value as Record<string, unknown>) : { arguments: record.arguments };
    if (this.calls.length >= MAX_RECORDED) return;
    const call: SimulatedToolCall = { name: record.name, arguments: args, result: '', mocked: false, ok: true };
    this.calls.push(call);
    this.#reported.set(record.tool_call_id, call);
  }

  async #answer(mock: ToolMock, signal: AbortSignal | undefined): Promise<FunctionOutcome> {
    const delayMs = mock.delay_ms ?? 0;
    if (this.#waitDelays && delayMs > 0) await sleep(this.#time, delayMs, signal);
    else this.pendingDelayMs += delayMs;
    const status = mock.status ?? 200;
    const body = mock.response === undefined ? {} : mock.response;
    const text = (typeof body === 'string' ? body : JSON.stringify(body)).slice(0, FUNCTION_RESULT_MAX_CHARS);
    if (status < 200 || status > 299) return { ok: false, content: `error: http ${status}: ${text}`, error: `http_${status}`, durationMs: delayMs };
    return typeof body === 'string' ? { ok: true, content: text, durationMs: delayMs } : { ok: true, content: text, json: body, durationMs: delayMs };
  }
}

function sleep(time: Scheduler, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = time.setTimeout(done, ms);
    function done() {
      time.clear(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Leads and tickets a simulated call's flow makes: kept in the run's result. */
export class RunArtefacts implements FlowTools {
  readonly leads: Array<Record<string, unknown>> = [];
  readonly tickets: Array<Record<string, unknown>> = [];

  async createLead(fields: Parameters<FlowTools['createLead']>[0]): Promise<unknown> {
    const lead = { id: this.leads.length + 1, ...fields };
    if (this.leads.length < MAX_RECORDED) this.leads.push(lead);
    return lead;
  }

  async createTicket(fields: Parameters<FlowTools['createTicket']>[0]): Promise<unknown> {
    const ticket = { id: this.tickets.length + 1, status: 'open', ...fields };
    if (this.tickets.length < MAX_RECORDED) this.tickets.push(ticket);
    return ticket;
  }
}
