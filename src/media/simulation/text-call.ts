/**
 * A simulated call in text mode: the caller's words go straight to the response engine and the
 * agent's words are read back; no recogniser, no synthesiser. Turns, functions, leads and tickets
 * are the engine's own, as in a real call. A script is played turn by turn; a persona is played
 * by the LLM, one turn at a time, until it hangs up or MAX_PERSONA_TURNS.
 */
import { type Caller, MAX_PERSONA_TURNS, type ScriptTurn, type SimulatedUtterance } from '../../domain/agent-test.ts';
import { type LlmProvider, chatText } from '../../providers/llm.ts';
import type { EngineOutcome, EngineOutput } from '../../voice/index.ts';
import type { BuiltEngine } from '../engine-factory.ts';
import type { MockedFunctions } from './mocks.ts';

/** Words of an interrupted reply the caller hears before speaking over it, by default. */
export const DEFAULT_INTERRUPT_AFTER_WORDS = 2;

/** What a text-mode call left, before the analysis and the assertions. */
export interface TextCallOutcome {
  transcript: SimulatedUtterance[];
  nodePath: string[];
  latenciesMs: number[];
  disconnectionReason: string;
  outcome: EngineOutcome;
}

/** One reply of the agent as the engine produced it. */
interface Reply {
  text: string;
  hungUp: boolean;
  latencyMs: number | null;
}

/**
 * Plays `caller` against the built engine. Throws the engine's error (the runner reports it).
 * `reportsTools`: the engine's function calls run elsewhere (a custom LLM's server) and are only
 * reported; they are recorded among the case's calls.
 */
export async function playTextCall(built: BuiltEngine, caller: Caller, functions: MockedFunctions, llm: LlmProvider | undefined, signal: AbortSignal, reportsTools = false): Promise<TextCallOutcome> {
  const engine = built.engine;
  const transcript: SimulatedUtterance[] = [];
  const nodePath: string[] = [];
  const latenciesMs: number[] = [];
  const notePosition = () => {
    const at = built.position();
    if (at !== undefined && at !== nodePath[nodePath.length - 1]) nodePath.push(at);
  };
  notePosition();
  /** The agent's last reply, not yet reported as heard: the next turn says whether it was cut off. */
  let unheard: { entry: SimulatedUtterance; text: string } | undefined;
  let hungUp = false;

  const collect = async (outputs: AsyncIterable<EngineOutput>): Promise<Reply> => {
    functions.pendingDelayMs = 0;
    const started = performance.now();
    let first: number | null = null;
    let text = '';
    let ended = false;
    for await (const out of outputs) {
      notePosition();
      if (out.type === 'text') {
        if (first === null && out.text.trim()) first = performance.now() - started + functions.pendingDelayMs;
        text += out.text;
      } else if (out.type === 'hangup') ended = true;
      else if (reportsTools) functions.reported(out);
    }
    notePosition();
    return { text: text.trim(), hungUp: ended, latencyMs: first };
  };
  const said = (reply: Reply, measured: boolean) => {
    hungUp ||= reply.hungUp;
    if (measured && reply.latencyMs !== null) latenciesMs.push(Math.round(reply.latencyMs * 100) / 100);
    if (!reply.text) return;
    const entry: SimulatedUtterance = { role: 'agent', content: reply.text };
    transcript.push(entry);
    unheard = { entry, text: reply.text };
  };
  const heard = (cutAfterWords?: number) => {
    if (!unheard) return;
    const { entry, text } = unheard;
    unheard = undefined;
    if (cutAfterWords === undefined) {
      engine.agentSpoke(text, false);
      return;
    }
    const words = text.split(/\s+/);
    const kept = words.slice(0, cutAfterWords).join(' ');
    if (cutAfterWords >= words.length) {
      engine.agentSpoke(text, false);
      return;
    }
    entry.content = kept;
    entry.cut_off = true;
    engine.agentSpoke(kept, true);
  };
  const userTurn = async (text: string, options: { dtmf?: boolean; interruptAfterWords?: number } = {}) => {
    heard(options.interruptAfterWords);
    transcript.push({ role: 'user', content: text, ...(options.dtmf ? { dtmf: true } : {}) });
    said(await collect(engine.respond(text, signal)), true);
  };

  if (built.startSpeaker === 'agent') said(await collect(engine.begin(signal)), false);
  if ('script' in caller) {
    for (const turn of caller.script) {
      if (hungUp || signal.aborted) break;
      await playTurn(turn, userTurn);
    }
  } else {
    if (!llm) throw new Error('a persona caller needs an LLM (set LLM_BASE_URL)');
    const maxTurns = caller.max_turns ?? MAX_PERSONA_TURNS;
    for (let i = 0; i < maxTurns && !hungUp && !signal.aborted; i++) {
      const next = await personaTurn(llm, caller, transcript, signal);
      if (next === null) break;
      await userTurn(next);
    }
  }
  heard();
  return { transcript, nodePath, latenciesMs, disconnectionReason: hungUp ? 'agent_hangup' : 'user_hangup', outcome: engine.outcome() };
}

async function playTurn(turn: ScriptTurn, userTurn: (text: string, options?: { dtmf?: boolean; interruptAfterWords?: number }) => Promise<void>): Promise<void> {
  if ('say' in turn) await userTurn(turn.say);
  else if ('dtmf' in turn) await userTurn(turn.dtmf, { dtmf: true });
  else if ('interrupt' in turn) await userTurn(turn.interrupt, { interruptAfterWords: turn.after_words ?? DEFAULT_INTERRUPT_AFTER_WORDS });
  // wait_ms: the caller is silent. The engine has no clock of its own; the session's silence
  // timers (reminders, end_call_after_silence_ms) belong to audio mode.
}

/** Marks the persona's wish to hang up. */
const HANG_UP = 'END_CALL';

/** The persona's next words, or null when it hangs up. */
export async function personaTurn(llm: LlmProvider, caller: { persona: string; goal: string }, transcript: readonly SimulatedUtterance[], signal: AbortSignal): Promise<string | null> {
  const conversation = transcript.map((u) => `${u.role === 'agent' ? 'Agent' : 'You'}: ${u.content}`).join('\n');
  const answer = await chatText(llm, {
    messages: [
      {
        role: 'system',
        content:
          `You are a caller on a phone call with a voice agent. Who you are: ${caller.persona}\nYour goal: ${caller.goal}\n` +
          `Answer with only the words you say next, one or two short sentences. When your goal is met or cannot be met, answer exactly ${HANG_UP}.`,
      },
      { role: 'user', content: conversation ? `The call so far:\n${conversation}\n\nWhat do you say next?` : 'The call has just connected. What do you say?' },
    ],
    temperature: 0,
    signal,
  });
  const text = answer.trim().slice(0, 2_000);
  return text === '' || text.includes(HANG_UP) ? null : text;
}
