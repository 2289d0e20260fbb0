import type { ChatDelta, ChatRequest, LlmProvider, ChatMessage } from '../llm.ts';
import { ProviderError } from '../errors.ts';
import { post, sseData, type OpenAiEndpoint } from './http.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';

/** Tool calls taken from one answer; more is a broken answer. */
const MAX_TOOL_CALLS = 32;
/** Characters of one tool call's arguments; more is a broken answer. */
const MAX_TOOL_ARGUMENT_CHARS = 65_536;

export interface OpenAiChatOptions extends OpenAiEndpoint {
  /** Default model, e.g. 'gpt-4o-mini'. */
  model: string;
}

interface StreamChunk {
  choices?: Array<{
    delta?: { content?: string | null; tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> };
    finish_reason?: string | null;
  }>;
  error?: { message?: string };
}

function wireMessage(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'assistant' && m.tool_calls?.length) {
    return {
      role: 'assistant',
      content: m.content,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    };
  }
  return { ...m };
}

/** OpenAI-compatible chat completions, streamed (SSE), with tools (function calling). */
export class OpenAiChatLlm implements LlmProvider {
  readonly id = 'openai-chat';
  readonly #o: OpenAiChatOptions;

  constructor(options: OpenAiChatOptions) {
    this.#o = options;
  }

  async *chat(request: ChatRequest): AsyncIterable<ChatDelta> {
    const body = {
      model: request.model ?? this.#o.model,
      stream: true,
      messages: request.messages.map(wireMessage),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.json ? { response_format: { type: 'json_object' } } : {}),
      ...(request.tools?.length
        ? { tools: request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters, ...(t.strict ? { strict: true } : {}) } })) }
        : {}),
    };
    const res = await post('llm', this.id, this.#o, '/chat/completions', JSON.stringify(body), { 'content-type': 'application/json', accept: 'text/event-stream' }, request.signal);
    if (!res.body) throw new ProviderError('llm', this.id, 'empty response');
    const type = res.headers.get('content-type');
    if (type && !/event-stream/i.test(type)) {
      await res.body.cancel().catch(() => {});
      throw new ProviderError('llm', this.id, `expected a text/event-stream answer, got ${type.slice(0, 60)}`);
    }
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    let finish = 'stop';
    try {
      for await (const data of sseData(res.body, request.signal)) {
        if (data === '[DONE]') break;
        const parsed = parseBoundedJson(data);
        if (!parsed.ok) throw new ProviderError('llm', this.id, `malformed stream chunk (it ${parsed.problem})`);
        const chunk = parsed.value as StreamChunk;
        if (typeof chunk !== 'object' || chunk === null) throw new ProviderError('llm', this.id, 'malformed stream chunk (not an object)');
        if (chunk.error) throw new ProviderError('llm', this.id, `stream error: ${typeof chunk.error.message === 'string' ? chunk.error.message.slice(0, 200) : 'unknown'}`);
        const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
        if (typeof choice !== 'object' || choice === null) continue;
        // Every field is checked before use: the answer is a peer's, whatever the schema says.
        const content = choice.delta?.content;
        if (typeof content === 'string' && content) yield { type: 'text', text: content };
        const toolCalls = choice.delta?.tool_calls;
        for (const tc of Array.isArray(toolCalls) ? toolCalls : []) {
          if (typeof tc !== 'object' || tc === null || !Number.isInteger(tc.index)) throw new ProviderError('llm', this.id, 'malformed tool call in the stream');
          const cur = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          if (!calls.has(tc.index) && calls.size >= MAX_TOOL_CALLS) throw new ProviderError('llm', this.id, `more than ${MAX_TOOL_CALLS} tool calls in one answer`);
          if (typeof tc.id === 'string' && tc.id) cur.id = tc.id.slice(0, 256);
          if (typeof tc.function?.name === 'string') cur.name = (cur.name + tc.function.name).slice(0, 256);
          if (typeof tc.function?.arguments === 'string') cur.arguments += tc.function.arguments;
          if (cur.arguments.length > MAX_TOOL_ARGUMENT_CHARS) throw new ProviderError('llm', this.id, `tool call arguments longer than ${MAX_TOOL_ARGUMENT_CHARS} characters`);
          calls.set(tc.index, cur);
        }
        if (typeof choice.finish_reason === 'string' && choice.finish_reason) finish = choice.finish_reason.slice(0, 64);
      }
    } catch (e) {
      if (request.signal?.aborted) throw request.signal.reason;
      throw e instanceof ProviderError ? e : new ProviderError('llm', this.id, 'stream interrupted', { retryable: true, cause: e });
    }
    for (const [, c] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
      yield { type: 'tool_call', call: { id: c.id || `call_${Math.random().toString(36).slice(2)}`, name: c.name, arguments: c.arguments } };
    }
    yield { type: 'done', finishReason: finish };
  }
}
