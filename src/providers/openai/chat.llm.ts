import type { ChatDelta, ChatRequest, LlmProvider, ChatMessage } from '../llm.ts';
import { ProviderError } from '../errors.ts';
import { post, sseData, type OpenAiEndpoint } from './http.ts';

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
        ? { tools: request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
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
        let chunk: StreamChunk;
        try {
          chunk = JSON.parse(data) as StreamChunk;
        } catch {
          throw new ProviderError('llm', this.id, 'malformed stream chunk');
        }
        if (chunk.error) throw new ProviderError('llm', this.id, `stream error: ${chunk.error.message ?? 'unknown'}`);
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const content = choice.delta?.content;
        if (content) yield { type: 'text', text: content };
        for (const tc of choice.delta?.tool_calls ?? []) {
          const cur = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          if (tc.id) cur.id = tc.id;
          if (tc.function?.name) cur.name += tc.function.name;
          if (tc.function?.arguments) cur.arguments += tc.function.arguments;
          calls.set(tc.index, cur);
        }
        if (choice.finish_reason) finish = choice.finish_reason;
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
