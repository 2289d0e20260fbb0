import type { ChatMessage, ChatTool, ChatToolCall, LlmProvider } from '../../providers/llm.ts';
import { renderTemplate, resolveVariables } from './variables.ts';
import { mergePhrases, namesFromVariables } from './expected.ts';
import { EngineError, type CallVariables, type EngineOutcome, type EngineOutput, type ResponseEngine, type ServiceLlm, type ServiceLlmState } from './types.ts';

/** LLM round trips allowed per user turn (state transitions re-prompt in the new state). */
const MAX_ROUNDS_PER_TURN = 4;
const SPOKEN_STYLE =
  'You are speaking on a phone call. Reply with one to three short spoken sentences: no lists, no markdown, no emojis.';

export interface LlmEngineOptions {
  config: ServiceLlm;
  llm: LlmProvider;
  /** Call-level variables, read on every turn. */
  variables?: () => CallVariables;
  /** current_state of create-web-call; default config.starting_state, else the first state. */
  startState?: string;
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
  #state: ServiceLlmState | undefined;
  #history: ChatMessage[] = [];
  #reachedEnd = false;

  constructor(options: LlmEngineOptions) {
    this.#config = options.config;
    this.#llm = options.llm;
    this.#callVariables = options.variables ?? (() => ({}));
    this.#states = new Map((options.config.states ?? []).map((s) => [s.name, s]));
    const start = options.startState ?? options.config.starting_state;
    if (start !== undefined && !this.#states.has(start)) throw new EngineError('error_config', `no state ${start}`);
    this.#state = start !== undefined ? this.#states.get(start) : options.config.states?.[0];
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
    return { reachedEnd: this.#reachedEnd, variables: {}, names: [], ...(this.#state ? { position: this.#state.name } : {}) };
  }

  async *begin(signal: AbortSignal): AsyncIterable<EngineOutput> {
    const bm = this.#config.begin_message;
    if (bm !== undefined) {
      const text = renderTemplate(bm, this.variables()).trim();
      if (text) yield { type: 'text', text };
      return;
    }
    yield* this.#converse(signal);
  }

  async *respond(userText: string, signal: AbortSignal): AsyncIterable<EngineOutput> {
    this.#history.push({ role: 'user', content: userText });
    if (this.#reachedEnd) return;
    yield* this.#converse(signal);
  }

  agentSpoke(text: string, cutOff: boolean): void {
    if (!text) return;
    this.#history.push({ role: 'assistant', content: cutOff ? `${text} [interrupted]` : text });
  }

  #systemPrompt(vars: Record<string, string>): string {
    return [
      renderTemplate(this.#config.general_prompt ?? '', vars),
      this.#state?.state_prompt ? renderTemplate(this.#state.state_prompt, vars) : '',
      SPOKEN_STYLE,
    ]
      .filter(Boolean)
      .join('\n\n');
  }

  #tools(): ChatTool[] {
    const tools: ChatTool[] = (this.#state?.edges ?? []).map((e) => ({
      name: transitionToolName(e.destination_state_name),
      description: e.description ?? `Move the conversation to the ${e.destination_state_name} state.`,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    }));
    tools.push({
      name: 'end_call',
      description: 'End the call once the conversation is complete or the user wants to hang up.',
      parameters: {
        type: 'object',
        properties: { message: { type: 'string', description: 'A short goodbye to say before hanging up.' } },
        additionalProperties: false,
      },
    });
    return tools;
  }

  async *#converse(signal: AbortSignal): AsyncIterable<EngineOutput> {
    for (let round = 0; round < MAX_ROUNDS_PER_TURN; round++) {
      const vars = this.variables();
      const calls: ChatToolCall[] = [];
      let spoke = false;
      try {
        for await (const d of this.#llm.chat({
          messages: [{ role: 'system', content: this.#systemPrompt(vars) }, ...this.#history],
          tools: this.#tools(),
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
      this.#history.push({ role: 'assistant', content: null, tool_calls: calls });
      let moved = false;
      for (const call of calls) {
        if (call.name === 'end_call') {
          const goodbye = parseArgs(call.arguments)['message'];
          this.#history.push({ role: 'tool', tool_call_id: call.id, content: 'call ended' });
          if (typeof goodbye === 'string' && goodbye.trim()) yield { type: 'text', text: goodbye.trim() };
          this.#reachedEnd = true;
          yield { type: 'hangup', reason: 'agent_hangup' };
          return;
        }
        const dest = (this.#state?.edges ?? []).find((e) => transitionToolName(e.destination_state_name) === call.name);
        const next = dest ? this.#states.get(dest.destination_state_name) : undefined;
        if (next) {
          this.#state = next;
          moved = true;
          this.#history.push({ role: 'tool', tool_call_id: call.id, content: `now in state ${next.name}` });
        } else {
          this.#history.push({ role: 'tool', tool_call_id: call.id, content: 'unknown tool' });
        }
      }
      // After a transition the model speaks in the new state, unless it already spoke this turn.
      if (spoke && moved) return;
    }
  }
}

function parseArgs(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json || '{}');
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
