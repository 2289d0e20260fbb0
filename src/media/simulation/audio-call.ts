/**
 * A simulated call in audio mode: the case's script (or a persona's words, from the LLM) is spoken
 * by a voice of the configured synthesiser (Flite on the embedded engines) into a CallSession on an
 * in-process endpoint, so the whole pipeline runs (voice activity, recognition, end of turn, the
 * engine, synthesis, barge-in); keys are pressed one event at a time, as a phone sends them. The
 * session is the real one; only what it stores is kept in the run: a call that no store holds
 * (SimulatedCallStore), a recording that is discarded, mocked functions, leads and tickets in the
 * run. The call runs on a virtual clock where its recogniser allows it, else in real time
 * (caller-clock.ts); the result says which (`clock`).
 */
import { MAX_PERSONA_TURNS, type SimulatedUtterance, type TestCase, type TestCaseResult } from '../../domain/agent-test.ts';
import type { ToolTranscriptEntry } from '../../domain/call.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Providers } from '../../providers/registry.ts';
import type { ResolvedAgentVersion } from '../../services/agent.service.ts';
import { type FunctionCaller, summarizeLatency } from '../../voice/index.ts';
import { CallSession, type SessionTimings } from '../call-session.ts';
import type { CallEvent } from '../endpoint.ts';
import { judgeAll } from './assertions.ts';
import { type CallerClock, EngineActivity, RealTimeCallerClock, VirtualCallerClock, runsOnVirtualClock } from './caller-clock.ts';
import { CallerLine, type SimulatedCallerEndpoint } from './caller-line.ts';
import { MockedFunctions, RunArtefacts } from './mocks.ts';
import { DISCARDED, SimulatedCallStore, caseCallDetails, simulatedCall } from './simulated-call.ts';
import type { TestSpeech } from './test-speech.ts';
import type { SimulatedCustomLlm } from './case-runner.ts';
import { DEFAULT_INTERRUPT_AFTER_WORDS, personaTurn } from './text-call.ts';
import { concatPcm } from '../../lib/pcm.ts';

export type { SimulatedCallerEndpoint } from './caller-line.ts';

export interface AudioPlayerDeps {
  /** The configured LLM (personas), if any. */
  llm: Providers['llm'];
  /** The recogniser and synthesiser of each case (its `providers`, else the embedded ones). */
  speech: TestSpeech;
  /** Custom-LLM agents' sockets; none: such agents' calls end as a call without a socket opener would. */
  customLlm?: SimulatedCustomLlm;
  /** The account's real function caller, for cases that allow unmocked functions; none: they are refused. */
  functions?: (accountId: string, details: () => unknown) => FunctionCaller;
  /** The call sessions' timings (the server's: STT_TIMEOUT_MS...). */
  timings: SessionTimings;
  /** A new caller-side endpoint that hands audio over at once (the loopback endpoint, realTime off). */
  endpoint: () => SimulatedCallerEndpoint;
  log: Logger;
}

/** Silence after each spoken turn, ms: longer than the longest end-of-turn wait the agents default to. */
const TURN_TAIL_MS = 1_200;
/** Longest wait for the agent's reply to a turn, ms of the call's time. */
const REPLY_WAIT_MS = 30_000;
/** How long the caller stays on the line after the script, for the agent to end the call, ms. */
const HANGUP_GRACE_MS = 1_500;
/** How long a word of the agent's takes to say, roughly, ms (where an interruption begins). */
const MS_PER_WORD = 330;
/** Longest the call's clock runs on after the hang-up while the session stores its results, ms. */
const WIND_DOWN_MS = 60_000;

const silence = (ms: number) => new Int16Array(16 * ms);

/** The call as the session transcribed it so far (its latest transcript event), for a persona. */
function heardSoFar(events: readonly CallEvent[]): SimulatedUtterance[] {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type === 'transcript') return e.lines.map((l) => ({ role: l.role, content: l.text }));
  }
  return [];
}


/** A function call in the call's record, as a custom LLM's server reported it, recorded as text mode records it. */
function reportToolCall(functions: MockedFunctions, entry: ToolTranscriptEntry): void {
  if (entry.role === 'tool_call_invocation') functions.reported({ type: 'tool_call_invocation', tool_call_id: entry.tool_call_id, name: entry.name, arguments: entry.arguments });
  else if (entry.role === 'tool_call_result') functions.reported({ type: 'tool_call_result', tool_call_id: entry.tool_call_id, content: entry.content });
}

/** Plays audio-mode cases (the SimulationRunner's AudioCasePlayer). */
export function audioCasePlayer(deps: AudioPlayerDeps) {
  return async (accountId: string, testCase: TestCase, agent: ResolvedAgentVersion, signal: AbortSignal): Promise<TestCaseResult> => {
    const started = performance.now();
    const caller = testCase.caller;
    if ('persona' in caller && !deps.llm) throw new Error('a persona caller needs an LLM (set LLM_BASE_URL)');
    const voiceId = testCase.caller_voice_id ?? 'flite-kal16';
    const call = simulatedCall(accountId, testCase, agent);
    // The call's engines are watched, so its clock knows when they are at work (caller-clock.ts).
    const activity = new EngineActivity();
    const speech = deps.speech.forCase(testCase.providers ?? {});
    // A custom LLM answers over its own socket, which the virtual clock cannot watch: its calls run in real time.
    const virtual = runsOnVirtualClock(speech.stt) && agent.engine.type !== 'custom_llm';
    const clock: CallerClock = virtual ? new VirtualCallerClock(activity) : new RealTimeCallerClock();
    const providers: Providers = {
      ...speech,
      stt: activity.stt(speech.stt),
      tts: activity.tts(speech.tts),
      llm: speech.llm ? activity.llm(speech.llm) : undefined,
    };
    const store = new SimulatedCallStore(call);
    const real = testCase.allow_unmocked_functions ? deps.functions?.(accountId, caseCallDetails(testCase, agent)) : undefined;
    const functions = new MockedFunctions(testCase.tool_mocks, real, { waitDelays: true, scheduler: clock.scheduler });
    const artefacts = new RunArtefacts();
    const endpoint = deps.endpoint();
    const session = new CallSession(call, agent, endpoint, {
      calls: store,
      providers,
      tools: () => artefacts,
      functions: () => functions,
      recordings: DISCARDED,
      ...(deps.customLlm ? { customLlm: deps.customLlm } : {}),
      log: deps.log.child({ callId: call.call_id, transport: endpoint.transport }),
      timings: deps.timings,
      scheduler: clock.scheduler,
    });
    const line = new CallerLine(endpoint, clock);
    const stop = () => void session.end('user_hangup');
    signal.addEventListener('abort', stop, { once: true });
    try {
      await session.start();
      endpoint.attach(session.sink);
      /** Waits for the agent to start a reply after `mark` and, unless `startOnly`, to finish it. */
      const reply = async (mark: number, startOnly: boolean) => {
        let talking: CallEvent | undefined;
        await line.until(() => (talking = line.seen(mark, (e) => e.type === 'agent_talking')) !== undefined, REPLY_WAIT_MS, signal);
        if (talking?.type !== 'agent_talking' || startOnly) return;
        const id = talking.utteranceId;
        await line.until(() => line.seen(mark, (e) => e.type === 'agent_done' && e.utteranceId === id) !== undefined, REPLY_WAIT_MS, signal);
      };
      const speak = async (text: string) => {
        const parts: Int16Array[] = [];
        for await (const chunk of speech.tts.synthesize(text, { voiceId })) parts.push(chunk);
        line.say(concatPcm([...parts, silence(TURN_TAIL_MS)]));
      };
      const script = 'script' in caller ? caller.script : [];
      const interrupts = (i: number) => { const next = script[i + 1]; return next !== undefined && 'interrupt' in next; };
      // The agent's opening, when it speaks first.
      const definition = agent.engine.type === 'custom_llm' ? undefined : agent.engine.definition;
      if ((definition?.start_speaker ?? 'agent') === 'agent') await reply(0, interrupts(-1));
      for (const [i, turn] of script.entries()) {
        if (signal.aborted || line.over) break;
        const mark = line.mark;
        if ('say' in turn) {
          await speak(turn.say);
          await reply(mark, interrupts(i));
        } else if ('dtmf' in turn) {
          await line.press(turn.dtmf, session.sink, signal);
          await reply(mark, interrupts(i));
        } else if ('wait_ms' in turn) {
          await line.until(() => false, turn.wait_ms, signal);
        } else {
          // The agent's reply has begun (the previous turn waited for it): speak over it after about `after_words` words.
          await line.until(() => false, (turn.after_words ?? DEFAULT_INTERRUPT_AFTER_WORDS) * MS_PER_WORD, signal);
          const at = line.mark;
          await speak(turn.interrupt);
          await reply(at, interrupts(i));
        }
      }
      if ('persona' in caller && deps.llm) {
        // The persona's words come from the LLM, one turn at a time, heard as the session transcribed the call so far.
        const maxTurns = caller.max_turns ?? MAX_PERSONA_TURNS;
        for (let i = 0; i < maxTurns && !line.over && !signal.aborted; i++) {
          const next = await personaTurn(deps.llm, caller, heardSoFar(endpoint.events), signal);
          if (next === null) break;
          const mark = line.mark;
          await speak(next);
          await reply(mark, false);
        }
      }
      // The caller hangs up once the script is over, unless the agent does (after its goodbye) first.
      await line.until(() => false, HANGUP_GRACE_MS, signal);
      endpoint.hangup();
      // The session stores its results on the call's clock (its timers): the clock runs on until it has.
      let stored = false;
      void session.done.then(() => (stored = true));
      await line.until(() => stored, WIND_DOWN_MS, new AbortController().signal);
      await endpoint.ended;
      await session.done;
    } finally {
      signal.removeEventListener('abort', stop);
    }
    const outcome = store.outcome;
    if (!outcome) throw new Error('the simulated call ended without a result');
    const transcript: SimulatedUtterance[] = (outcome.transcriptObject ?? []).map((u) => ({ role: u.role, content: u.content, ...(u.cut_off ? { cut_off: true } : {}) }));
    const nodePath: string[] = [];
    if (agent.engine.type === 'conversation_flow') nodePath.push(agent.engine.definition.start_node_id);
    for (const e of endpoint.events) if (e.type === 'node_changed' && e.to !== nodePath[nodePath.length - 1]) nodePath.push(e.to);
    const latencies = outcome.latency?.e2e.values ?? [];
    const reason = outcome.reason;
    const callSuccessful = outcome.callAnalysis?.call_successful ?? false;
    // A custom LLM's server runs its functions itself and reports them: they are in the call's record, not in `functions`.
    if (agent.engine.type === 'custom_llm') for (const entry of outcome.transcriptWithToolCalls ?? []) reportToolCall(functions, entry);
    const variables = { ...testCase.dynamic_variables };
    const assertions = await judgeAll(testCase.assertions, { transcript, nodePath, toolCalls: functions.calls, variables, disconnectionReason: reason, callSuccessful, latenciesMs: latencies }, deps.llm, signal);
    const latency = summarizeLatency(latencies);
    return {
      test_case_id: testCase.test_case_id,
      name: testCase.name,
      mode: 'audio',
      agent_version: agent.version,
      passed: assertions.every((a) => a.passed || a.skipped === true),
      error: null,
      assertions,
      transcript,
      node_path: nodePath,
      tool_calls: functions.calls,
      variables,
      disconnection_reason: reason,
      call_successful: callSuccessful,
      leads: artefacts.leads,
      tickets: artefacts.tickets,
      latency: { e2e_p50_ms: latency.num ? latency.p50 : null, e2e_p90_ms: latency.num ? latency.p90 : null, values_ms: latency.values },
      duration_ms: Math.round(performance.now() - started),
      simulated_ms: line.elapsedMs,
      clock: clock.kind,
      providers: { stt: speech.stt.id, tts: speech.tts.id },
    };
  };
}
