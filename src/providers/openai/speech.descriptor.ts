import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey, requiredUrl } from '../settings.ts';
import { OpenAiSpeechTts, openAiSpeechCapabilities, type OpenAiSpeechOptions } from './speech.tts.ts';

/**
 * TTS_PROVIDER=openai: an OpenAI-compatible speech endpoint. Reads TTS_BASE_URL (required),
 * TTS_MODEL (default tts-1), TTS_VOICE (default alloy) and TTS_API_KEY.
 */
export const openAiSpeechTts: ProviderDescriptor<'tts', OpenAiSpeechOptions> = {
  id: 'openai',
  role: 'tts',
  fromConfig(reader, problems) {
    const baseUrl = requiredUrl(reader, problems, 'TTS_BASE_URL', 'TTS_PROVIDER=openai');
    return { baseUrl, model: reader.string('TTS_MODEL', 'tts-1'), defaultVoice: reader.string('TTS_VOICE', 'alloy'), ...apiKey(reader, 'TTS_API_KEY') };
  },
  create: (options) => new OpenAiSpeechTts(options),
  capabilities: (options) => openAiSpeechCapabilities(options),
  remote: (options) => ({ keyVariable: 'TTS_API_KEY', apiKey: options.apiKey, probeUrl: `${options.baseUrl.replace(/\/+$/, '')}/models` }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'openai-speech', role: 'tts', selected: true, available: true, detail: `configured: ${options.baseUrl} model ${options.model} (not contacted)` }];
  },
};
