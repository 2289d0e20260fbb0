/** Chat-completions LLM, OpenAI wire semantics. */
export interface ChatToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text of the arguments, as streamed by the model. */
  readonly arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface ChatTool {
  readonly name: string;
  readonly description?: string;
  /** JSON schema of the arguments object. */
  readonly parameters: Record<string, unknown>;
  /** Ask the model to follow `parameters` exactly (OpenAI's `strict`); default off. */
  readonly strict?: boolean;
}

export interface ChatRequest {
  messages: readonly ChatMessage[];
  tools?: readonly ChatTool[];
  /** Overrides the provider's default model. */
  model?: string;
  temperature?: number;
  /** Ask for a JSON object answer (response_format json_object). */
  json?: boolean;
  signal?: AbortSignal;
}

/** Streamed output: text deltas as they arrive; each tool call once complete; then `done`. */
export type ChatDelta =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; call: ChatToolCall }
  | { type: 'done'; finishReason: string };

/** What a chat model endpoint can do (its descriptor states it; see SttCapabilities). */
export interface LlmCapabilities {
  /** Text deltas are yielded as they arrive, before the whole answer is known. */
  readonly streaming: boolean;
  /** ChatRequest.tools are offered to the model and its tool calls come back as `tool_call` deltas. */
  readonly tools: boolean;
}

export interface LlmProvider {
  readonly id: string;
  /** Rejects / throws ProviderError kind 'llm' on failure; stops early when `signal` aborts. */
  chat(request: ChatRequest): AsyncIterable<ChatDelta>;
}

/** Collects a whole text answer (no tools). */
export async function chatText(llm: LlmProvider, request: ChatRequest): Promise<string> {
  let out = '';
  for await (const d of llm.chat(request)) if (d.type === 'text') out += d.text;
  return out;
}
