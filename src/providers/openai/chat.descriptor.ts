import type { ProviderDescriptor } from '../descriptor.ts';
import type { LlmCapabilities } from '../llm.ts';
import { apiKey } from '../settings.ts';
import { OpenAiChatLlm, type OpenAiChatOptions } from './chat.llm.ts';

/** Streamed answers (SSE) with function calling. */
const CAPABILITIES: LlmCapabilities = { streaming: true, tools: true };

/**
 * The LLM when LLM_BASE_URL is set: an OpenAI-compatible chat-completions endpoint. Reads
 * LLM_BASE_URL, LLM_MODEL (default gpt-4o-mini), LLM_TIMEOUT_MS (default 10000) and LLM_API_KEY.
 */
export const openAiChatLlm: ProviderDescriptor<'llm', OpenAiChatOptions> = {
  id: 'openai',
  role: 'llm',
  enabledBy: 'LLM_BASE_URL',
  fromConfig: (reader) => ({
    baseUrl: reader.url('LLM_BASE_URL', ''),
    model: reader.string('LLM_MODEL', 'gpt-4o-mini'),
    timeoutMs: reader.integer('LLM_TIMEOUT_MS', 10_000, 500, 300_000),
    ...apiKey(reader, 'LLM_API_KEY'),
  }),
  create: (options) => new OpenAiChatLlm(options),
  capabilities: () => CAPABILITIES,
  remote: (options) => ({ keyVariable: 'LLM_API_KEY', apiKey: options.apiKey, probeUrl: `${options.baseUrl.replace(/\/+$/, '')}/models` }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'llm', role: 'llm', selected: true, available: true, detail: `openai-compatible chat at ${options.baseUrl}, model ${options.model} (not contacted)` }];
  },
};
