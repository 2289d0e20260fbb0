import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey } from '../settings.ts';
import { ASSEMBLYAI_ENGLISH_MODEL, ASSEMBLYAI_STREAMING_URL, AssemblyAiStt, assemblyAiCapabilities, type AssemblyAiOptions } from './assemblyai.stt.ts';

/**
 * STT_PROVIDER=assemblyai: AssemblyAI Universal-Streaming (v3 WebSocket). Reads STT_BASE_URL (a
 * ws:// or wss:// URL, default wss://streaming.assemblyai.com/v3/ws), STT_MODEL (speech_model,
 * default universal-streaming-english) and STT_API_KEY.
 */
export const assemblyAiStt: ProviderDescriptor<'stt', AssemblyAiOptions> = {
  id: 'assemblyai',
  role: 'stt',
  fromConfig(reader, problems) {
    const url = reader.string('STT_BASE_URL', ASSEMBLYAI_STREAMING_URL);
    if (!/^wss?:\/\/[^\s]+$/.test(url)) problems.push(`STT_BASE_URL must be a ws:// or wss:// URL with STT_PROVIDER=assemblyai (got "${url}")`);
    return { url, model: reader.string('STT_MODEL', ASSEMBLYAI_ENGLISH_MODEL), ...apiKey(reader, 'STT_API_KEY') };
  },
  create: (options) => new AssemblyAiStt(options),
  capabilities: (options) => assemblyAiCapabilities(options),
  // A streaming WebSocket endpoint: the key is checked, the endpoint is not asked.
  remote: (options) => ({ keyVariable: 'STT_API_KEY', apiKey: options.apiKey }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'assemblyai', role: 'stt', selected: true, available: true, detail: `configured: AssemblyAI Universal-Streaming at ${options.url ?? ASSEMBLYAI_STREAMING_URL}, ${options.model ?? ASSEMBLYAI_ENGLISH_MODEL} (not contacted)` }];
  },
};
