import type { ProviderDescriptor } from '../descriptor.ts';
import { apiKey } from '../settings.ts';
import { configuredVoices, mergeVoices } from '../streaming/voice-table.ts';
import { ELEVENLABS_BASE_URL, ElevenLabsTts, elevenLabsCapabilities, type ElevenLabsOptions } from './elevenlabs.tts.ts';
import { ELEVENLABS_PREMADE_VOICES, ELEVENLABS_VOICE_ID, ELEVENLABS_VOICE_PREFIX } from './elevenlabs.voices.ts';

/**
 * TTS_PROVIDER=elevenlabs: ElevenLabs' stream-input WebSocket. Reads TTS_API_KEY, TTS_BASE_URL
 * (ws:// or wss://, default wss://api.elevenlabs.io), TTS_MODEL (default eleven_flash_v2_5),
 * TTS_VOICE (default 11labs-Sarah), TTS_VOICES (the account's own voices, Name=voice-id,...) and
 * TTS_STREAMING_LATENCY (optimize_streaming_latency, 0-4, default 3).
 */
export const elevenLabsTts: ProviderDescriptor<'tts', ElevenLabsOptions> = {
  id: 'elevenlabs',
  role: 'tts',
  fromConfig(reader, problems) {
    const baseUrl = reader.string('TTS_BASE_URL', ELEVENLABS_BASE_URL);
    if (!/^wss?:\/\/[^\s]+$/.test(baseUrl)) problems.push(`TTS_BASE_URL must be a ws:// or wss:// URL with TTS_PROVIDER=elevenlabs (got "${baseUrl}")`);
    const voices = mergeVoices(ELEVENLABS_PREMADE_VOICES, configuredVoices(reader, problems, ELEVENLABS_VOICE_PREFIX, ELEVENLABS_VOICE_ID));
    const wanted = reader.string('TTS_VOICE', `${ELEVENLABS_VOICE_PREFIX}Sarah`);
    const named = wanted.startsWith(ELEVENLABS_VOICE_PREFIX) ? wanted : `${ELEVENLABS_VOICE_PREFIX}${wanted}`;
    if (!voices.some((v) => v.voiceId === named)) problems.push(`TTS_VOICE must be one of the ElevenLabs voices (a premade one such as 11labs-Sarah, or a TTS_VOICES name; got "${wanted}")`);
    return {
      baseUrl,
      model: reader.string('TTS_MODEL', 'eleven_flash_v2_5'),
      voices,
      defaultVoiceId: named,
      optimizeStreamingLatency: reader.integer('TTS_STREAMING_LATENCY', 3, 0, 4),
      ...apiKey(reader, 'TTS_API_KEY'),
    };
  },
  create: (options) => new ElevenLabsTts(options),
  capabilities: (options) => elevenLabsCapabilities(options),
  // The key is checked against the voices listing (an authenticated GET of the same host).
  remote: (options) => ({
    keyVariable: 'TTS_API_KEY',
    apiKey: options.apiKey,
    probeUrl: `${(options.baseUrl ?? ELEVENLABS_BASE_URL).replace(/^ws/, 'http').replace(/\/+$/, '')}/v1/voices`,
    ...(options.apiKey ? { probeHeaders: { 'xi-api-key': options.apiKey } } : {}),
  }),
  async doctor(options) {
    if (!options) return [];
    return [{ engine: 'elevenlabs', role: 'tts', selected: true, available: true, detail: `configured: ElevenLabs stream-input at ${options.baseUrl ?? ELEVENLABS_BASE_URL}, model ${options.model}, ${options.voices.length} voices (not contacted)` }];
  },
};
