/** A flow node's prompt instruction, spoken: the LLM writes the words of the current step. */
import type { ChatMessage, LlmProvider } from '../../providers/llm.ts';
import { languageInstruction } from './language.ts';
import { SPOKEN_STYLE } from './prompt.ts';
import { renderTemplate } from './variables.ts';
import { EngineError, type ConversationFlow, type EngineOutput } from './types.ts';

/** One prompt step: the node's instruction, the call's variables, what the model reads before it. */
export interface PromptStep {
  instruction: string;
  vars: Record<string, string>;
  /** Reference material, then the conversation so far. */
  history: readonly ChatMessage[];
  /** The agent's BCP-47 language: the model is told to reply in it. */
  language?: string;
}

/** Streams the LLM's words for a prompt step (global prompt + the step); a failure is EngineError `error_llm`. */
export async function* speakPromptStep(llm: LlmProvider, flow: ConversationFlow, step: PromptStep, signal: AbortSignal): AsyncIterable<EngineOutput> {
  const system = [
    renderTemplate(flow.global_prompt ?? '', step.vars),
    `Current step: ${renderTemplate(step.instruction, step.vars)}`,
    SPOKEN_STYLE,
    step.language ? languageInstruction(step.language) : '',
  ]
    .filter(Boolean)
    .join('\n\n');
  try {
    for await (const d of llm.chat({
      messages: [{ role: 'system', content: system }, ...step.history],
      ...(flow.model ? { model: flow.model } : {}),
      ...(flow.model_temperature !== undefined ? { temperature: flow.model_temperature } : {}),
      signal,
    })) {
      if (d.type === 'text' && d.text) yield { type: 'text', text: d.text };
    }
  } catch (e) {
    if (signal.aborted) throw e;
    throw new EngineError('error_llm', 'LLM failed while speaking a prompt node', e);
  }
}
