import type { HostedVoice } from '../streaming/voice-table.ts';

/** Prefix of Cartesia voices' ids, followed by Cartesia's own voice id ('cartesia-<uuid>'). */
export const CARTESIA_VOICE_PREFIX = 'cartesia-';

/** Cartesia's voice ids are UUIDs. */
export const CARTESIA_VOICE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Row = readonly [providerVoiceId: string, name: string, gender: 'male' | 'female', description: string];

/** Voices of Cartesia's public library that voice agents commonly use; TTS_VOICES adds others. */
const LIBRARY: readonly Row[] = [
  ['f786b574-daa5-4673-aa0c-cbe3e8534c02', 'Katie', 'female', 'Cartesia library voice, made for voice agents.'],
  ['9626c31c-bec5-4cca-baa8-f8ba9e84c8bc', 'Jacqueline', 'female', 'Cartesia library voice.'],
  ['a0e99841-438c-4a64-b679-ae501e7d6091', 'Barbershop Man', 'male', 'Cartesia library voice.'],
];

export const CARTESIA_LIBRARY_VOICES: readonly HostedVoice[] = LIBRARY.map(([providerVoiceId, name, gender, description]) => ({
  voiceId: `${CARTESIA_VOICE_PREFIX}${providerVoiceId}`,
  providerVoiceId,
  name,
  gender,
  description,
}));
