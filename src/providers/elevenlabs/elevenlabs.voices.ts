import type { HostedVoice } from '../streaming/voice-table.ts';

/** Prefix of ElevenLabs voices' ids, as Retell names them ('11labs-Adrian'). */
export const ELEVENLABS_VOICE_PREFIX = '11labs-';

/** ElevenLabs' voice ids: 20 letters and digits for premade voices; accounts' own voices alike. */
export const ELEVENLABS_VOICE_ID = /^[A-Za-z0-9]{10,64}$/;

type Row = readonly [providerVoiceId: string, name: string, gender: 'male' | 'female' | null, accent: string];

/** ElevenLabs' premade voices (GET /v1/voices, category "premade"), open to every account. */
const PREMADE: readonly Row[] = [
  ['EXAVITQu4vr4xnSDxMaL', 'Sarah', 'female', 'american'],
  ['CwhRBWXzGAHq8TQ4Fs17', 'Roger', 'male', 'american'],
  ['FGY2WhTYpPnrIDTdsKH5', 'Laura', 'female', 'american'],
  ['IKne3meq5aSn9XLyUdCD', 'Charlie', 'male', 'australian'],
  ['JBFqnCBsd6RMkjVDRZzb', 'George', 'male', 'british'],
  ['N2lVS1w4EtoT3dr4eOWO', 'Callum', 'male', 'american'],
  ['SAz9YHcvj6GT2YYXdXww', 'River', null, 'american'],
  ['SOYHLrjzK2X1ezoPC6cr', 'Harry', 'male', 'american'],
  ['TX3LPaxmHKxFdv7VOQHJ', 'Liam', 'male', 'american'],
  ['Xb7hH8MSUJpSbSDYk0k2', 'Alice', 'female', 'british'],
  ['XrExE9yKIg1WjnnlVkGX', 'Matilda', 'female', 'american'],
  ['bIHbv24MWmeRgasZH58o', 'Will', 'male', 'american'],
  ['cgSgspJ2msm6clMCkdW9', 'Jessica', 'female', 'american'],
  ['cjVigY5qzO86Huf0OWal', 'Eric', 'male', 'american'],
  ['hpp4J3VqNfWAUOO0d1Us', 'Bella', 'female', 'american'],
  ['iP95p4xoKVk53GoZ742B', 'Chris', 'male', 'american'],
  ['nPczCjzI2devNBz1zQrb', 'Brian', 'male', 'american'],
  ['onwK4e9ZLuTAKqWW03F9', 'Daniel', 'male', 'british'],
  ['pFZP5JQG7iQjIQuC4Bku', 'Lily', 'female', 'british'],
  ['pNInz6obpgDQGcFmaJgB', 'Adam', 'male', 'american'],
  ['pqHfZKP75CvOlQylNhV4', 'Bill', 'male', 'american'],
];

export const ELEVENLABS_PREMADE_VOICES: readonly HostedVoice[] = PREMADE.map(([providerVoiceId, name, gender, accent]) => ({
  voiceId: `${ELEVENLABS_VOICE_PREFIX}${name}`,
  providerVoiceId,
  name,
  gender,
  accent,
  description: `ElevenLabs premade voice (${accent} English accent).`,
}));
