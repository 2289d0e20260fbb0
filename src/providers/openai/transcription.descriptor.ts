import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey, requiredUrl } from '../settings.ts';
import { OPENAI_TRANSCRIPTION_CAPABILITIES, OpenAiTranscriptionStt, type OpenAiTranscriptionOptions } from './transcription.stt.ts';

/**
 * STT_PROVIDER=openai: an OpenAI-compatible transcription endpoint. Reads STT_BASE_URL
 * (required), STT_MODEL (default whisper-1) and STT_API_KEY.
 */
export const openAiTranscriptionStt: ProviderDescriptor<'stt', OpenAiTranscriptionOptions> = {
  id: 'openai',
  role: 'stt',
  fromConfig(reader, problems) {
    const baseUrl = requiredUrl(reader, problems, 'STT_BASE_URL', 'STT_PROVIDER=openai');
    return { baseUrl, model: reader.string('STT_MODEL', 'whisper-1'), ...apiKey(reader, 'STT_API_KEY') };
  },
  create: (options) => new OpenAiTranscriptionStt(options),
  capabilities: () => OPENAI_TRANSCRIPTION_CAPABILITIES,
  remote: (options) => ({ keyVariable: 'STT_API_KEY', apiKey: options.apiKey, probeUrl: `${options.baseUrl.replace(/\/+$/, '')}/models` }),
  async doctor(options) {
    if (!options) return [];
    return [
      { engine: 'openai-transcription', role: 'stt', selected: true, available: true, detail: `configured: openai-compatible transcription at ${options.baseUrl} (not contacted)` },
    ];
  },
};
