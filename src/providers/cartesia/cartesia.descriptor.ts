import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey } from '../settings.ts';
import { configuredVoices, mergeVoices } from '../streaming/voice-table.ts';
import { CARTESIA_API_VERSION, CARTESIA_TTS_URL, CartesiaTts, cartesiaCapabilities, type CartesiaOptions } from './cartesia.tts.ts';
import { CARTESIA_LIBRARY_VOICES, CARTESIA_VOICE_ID, CARTESIA_VOICE_PREFIX } from './cartesia.voices.ts';

/** The REST host of a TTS socket URL (wss://api.cartesia.ai/tts/websocket -> https://api.cartesia.ai). */
function restBase(url: string): string {
  const u = new URL(url);
  return `${u.protocol === 'ws:' ? 'http:' : 'https:'}//${u.host}`;
}

/**
 * TTS_PROVIDER=cartesia: Cartesia's TTS WebSocket. Reads TTS_API_KEY, TTS_BASE_URL (the socket's
 * ws:// or wss:// URL, default wss://api.cartesia.ai/tts/websocket), TTS_MODEL (default sonic-2),
 * TTS_API_VERSION (Cartesia-Version, default 2025-04-16), TTS_VOICE (default Katie's
 * cartesia-<id>) and TTS_VOICES (the account's own voices, Name=voice-uuid,...).
 */
export const cartesiaTts: ProviderDescriptor<'tts', CartesiaOptions> = {
  id: 'cartesia',
  role: 'tts',
  fromConfig(reader, problems) {
    const url = reader.string('TTS_BASE_URL', CARTESIA_TTS_URL);
    if (!/^wss?:\/\/[^\s]+$/.test(url)) problems.push(`TTS_BASE_URL must be a ws:// or wss:// URL with TTS_PROVIDER=cartesia (got "${url}")`);
    const voices = mergeVoices(CARTESIA_LIBRARY_VOICES, configuredVoices(reader, problems, CARTESIA_VOICE_PREFIX, CARTESIA_VOICE_ID, 'by-id'));
    const wanted = reader.string('TTS_VOICE', CARTESIA_LIBRARY_VOICES[0]!.voiceId);
    const named = wanted.startsWith(CARTESIA_VOICE_PREFIX) ? wanted : `${CARTESIA_VOICE_PREFIX}${wanted}`;
    if (!voices.some((v) => v.voiceId === named)) problems.push(`TTS_VOICE must be one of the Cartesia voices (cartesia-<voice id> of the library or of TTS_VOICES; got "${wanted}")`);
    return {
      url,
      model: reader.string('TTS_MODEL', 'sonic-2'),
      apiVersion: reader.string('TTS_API_VERSION', CARTESIA_API_VERSION),
      voices,
      defaultVoiceId: named,
      ...apiKey(reader, 'TTS_API_KEY'),
    };
  },
  create: (options) => new CartesiaTts(options),
  capabilities: (options) => cartesiaCapabilities(options),
  // The key is checked against the voices listing of the same host.
  remote: (options) => ({
    keyVariable: 'TTS_API_KEY',
    apiKey: options.apiKey,
    probeUrl: `${restBase(options.url ?? CARTESIA_TTS_URL)}/voices?limit=1`,
    ...(options.apiKey ? { probeHeaders: { 'X-API-Key': options.apiKey, 'Cartesia-Version': options.apiVersion ?? CARTESIA_API_VERSION } } : {}),
  }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'cartesia', role: 'tts', selected: true, available: true, detail: `configured: Cartesia at ${options.url ?? CARTESIA_TTS_URL}, model ${options.model}, ${options.voices.length} voices (not contacted)` }];
  },
};
