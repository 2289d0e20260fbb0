import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey } from '../settings.ts';
import { DEEPGRAM_CAPABILITIES, DEEPGRAM_LISTEN_URL, DeepgramStt, type DeepgramOptions } from './deepgram.stt.ts';

/**
 * STT_PROVIDER=deepgram: Deepgram-style streaming recognition. Reads STT_BASE_URL (a ws:// or
 * wss:// URL, default Deepgram's), STT_MODEL (optional) and STT_API_KEY.
 */
export const deepgramStt: ProviderDescriptor<'stt', DeepgramOptions> = {
  id: 'deepgram',
  role: 'stt',
  fromConfig(reader, problems) {
    const url = reader.string('STT_BASE_URL', DEEPGRAM_LISTEN_URL);
    if (!/^wss?:\/\/[^\s]+$/.test(url)) problems.push(`STT_BASE_URL must be a ws:// or wss:// URL with STT_PROVIDER=deepgram (got "${url}")`);
    const model = reader.optional('STT_MODEL');
    return { url, ...(model ? { model } : {}), ...apiKey(reader, 'STT_API_KEY') };
  },
  create: (options) => new DeepgramStt(options),
  capabilities: () => DEEPGRAM_CAPABILITIES,
  // A streaming WebSocket endpoint: the key is checked, the endpoint is not asked.
  remote: (options) => ({ keyVariable: 'STT_API_KEY', apiKey: options.apiKey }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'deepgram', role: 'stt', selected: true, available: true, detail: `configured: deepgram-style at ${options.url ?? DEEPGRAM_LISTEN_URL} (not contacted)` }];
  },
};
