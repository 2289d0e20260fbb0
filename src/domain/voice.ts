import { Type, type Static } from '@sinclair/typebox';
import { ANY_LANGUAGE, languageSupported } from '../lib/language-tags.ts';

/**
 * A voice of this server's speech engine, as `GET /list-voices` answers it: Retell's voice object
 * (voice_id, voice_name, provider, gender, accent, age, preview_audio_url) and what we know of
 * the audio besides.
 */
export const Voice = Type.Object(
  {
    voice_id: Type.String({ description: "The agent's `voice_id` for this voice." }),
    voice_name: Type.String(),
    provider: Type.String({ description: 'The engine that speaks it: flite (embedded), openai, fake.' }),
    gender: Type.Union([Type.Literal('male'), Type.Literal('female'), Type.Null()], { description: 'null where the engine does not say.' }),
    accent: Type.Optional(Type.String()),
    age: Type.Optional(Type.String()),
    preview_audio_url: Type.Optional(Type.String()),
    language: Type.String({ description: 'BCP-47 tag of the language the voice was made for.' }),
    multilingual: Type.Boolean({ description: "The voice also speaks the other languages of its engine (GET /list-voices' `languages`)." }),
    sample_rate_hz: Type.Integer({ description: 'Sample rate the engine produces the voice at, Hz; calls carry 16 kHz.' }),
    description: Type.String(),
  },
  { title: 'Voice' },
);
export type Voice = Static<typeof Voice>;

/**
 * What this server's speech engines offer agents; the composition root fills it from the
 * configured providers. Language lists hold exact BCP-47 tags ('en-US'), primary subtags ('fr':
 * any French tag) or '*' (any tag), as src/lib/language-tags.ts reads them.
 */
export interface SpeechCatalog {
  readonly recogniser: { readonly id: string; readonly languages: readonly string[] };
  readonly synthesiser: { readonly id: string; readonly languages: readonly string[]; readonly voices: readonly Voice[]; readonly defaultVoiceId: string };
}

/** A problem found in an agent's language or voice: the message, and details for the error body. */
export interface SpeechProblem {
  message: string;
  details: Record<string, unknown>;
}

/** Voices named in a refusal before pointing to GET /list-voices. */
const VOICES_NAMED = 3;

/** A language list in words: '*' is any BCP-47 tag; a primary subtag takes its regional tags. */
export function describeLanguages(list: readonly string[]): string {
  if (list.includes(ANY_LANGUAGE)) return 'any BCP-47 tag';
  const regional = list.some((l) => !l.includes('-'));
  return `${list.join(', ')}${regional ? ' (a two- or three-letter code takes its regional tags too: pt takes pt-BR)' : ''}`;
}

/** Why `language` cannot be an agent's language on these engines, or null when both take it. */
export function languageProblem(catalog: SpeechCatalog, language: string, field = 'language'): SpeechProblem | null {
  const { recogniser: stt, synthesiser: tts } = catalog;
  const refusedBy = [
    languageSupported(language, stt.languages) ? null : `the recogniser (${stt.id}) takes ${describeLanguages(stt.languages)}`,
    languageSupported(language, tts.languages) ? null : `the speech engine (${tts.id}) takes ${describeLanguages(tts.languages)}`,
  ].filter((s): s is string => s !== null);
  if (refusedBy.length === 0) return null;
  return {
    message: `${field} "${language}" is not supported by this server's speech engines: ${refusedBy.join('; ')}.`,
    details: { field, recogniser: { id: stt.id, languages: stt.languages }, speech: { id: tts.id, languages: tts.languages } },
  };
}

/** The voice of that id among the engine's voices. */
export function findVoice(catalog: SpeechCatalog, voiceId: string): Voice | undefined {
  return matchVoice(catalog.synthesiser.voices, voiceId);
}

/**
 * Retell's voice-id prefixes and the provider ids (a voice's `provider`) they name: Retell's ids
 * are `{prefix}-{Name}` ('11labs-Adrian', 'openai-Alloy', 'cartesia-Cleo').
 */
const RETELL_VOICE_PREFIXES: Readonly<Record<string, string>> = { '11labs': 'elevenlabs', elevenlabs: 'elevenlabs', openai: 'openai', cartesia: 'cartesia', deepgram: 'deepgram' };

/** How the refusal of a Retell voice id names the provider its prefix names, and the TTS_PROVIDER that configures it. */
const RETELL_VOICE_PROVIDERS: Readonly<Record<string, { name: string; setting: string | null }>> = {
  elevenlabs: { name: 'an ElevenLabs voice', setting: 'TTS_PROVIDER=elevenlabs' },
  openai: { name: 'an OpenAI voice', setting: 'TTS_PROVIDER=openai (any OpenAI-compatible speech endpoint, TTS_BASE_URL)' },
  cartesia: { name: 'a Cartesia voice', setting: 'TTS_PROVIDER=cartesia' },
  deepgram: { name: 'a Deepgram voice', setting: null },
};

/** For a Retell voice id whose provider has no voice configured here: why, and how to configure it. */
function unconfiguredProvider(voices: readonly Voice[], voiceId: string): string {
  const prefix = /^([a-z0-9]+)-./i.exec(voiceId)?.[1]?.toLowerCase();
  const provider = prefix === undefined ? undefined : RETELL_VOICE_PREFIXES[prefix];
  const named = provider === undefined ? undefined : RETELL_VOICE_PROVIDERS[provider];
  if (!provider || !named) return '';
  if (voices.some((v) => v.provider === provider)) return ` "${voiceId}" names ${named.name} by Retell's id, and the configured provider has no voice of that name (GET /list-voices).`;
  const how = named.setting ? `configure ${named.setting} to use it` : 'this server has no speech provider for it';
  return ` "${voiceId}" is Retell's id of ${named.name}, and no such provider is configured here: ${how} (docs/providers.md).`;
}

/**
 * The voice `voiceId` names among `voices`: the voice with that id, or for a Retell voice id, the
 * voice of the provider its prefix names whose id or name is the rest, in any case ('openai-Alloy'
 * is OpenAI's 'alloy'). Undefined when no configured provider has it.
 */
export function matchVoice<V extends { voice_id: string; voice_name: string; provider: string }>(voices: readonly V[], voiceId: string): V | undefined {
  const own = voices.find((v) => v.voice_id === voiceId);
  if (own) return own;
  const retell = /^([a-z0-9]+)-(.+)$/i.exec(voiceId);
  const provider = retell ? RETELL_VOICE_PREFIXES[retell[1]!.toLowerCase()] : undefined;
  if (!retell || !provider) return undefined;
  const name = retell[2]!.toLowerCase();
  return voices.find((v) => v.provider === provider && (v.voice_id.toLowerCase() === name || v.voice_name.toLowerCase() === name));
}

/**
 * Why `voiceId` cannot be an agent's voice on this engine, or null when it is one of its voices.
 * A Retell voice id ('openai-Alloy', '11labs-Adrian') whose name is one of ours is pointed to it.
 */
export function voiceProblem(catalog: SpeechCatalog, voiceId: string, field = 'voice_id'): SpeechProblem | null {
  if (findVoice(catalog, voiceId)) return null;
  const tts = catalog.synthesiser;
  const named = tts.voices.slice(0, VOICES_NAMED).map((v) => v.voice_id);
  const bare = /^[a-z0-9]+-(.+)$/i.exec(voiceId)?.[1]?.toLowerCase();
  const meant = bare === undefined ? undefined : tts.voices.find((v) => v.voice_id.toLowerCase() === bare);
  const hint = meant ? ` Did you mean "${meant.voice_id}"?` : '';
  return {
    message:
      `${field} "${voiceId}" is not a voice of this server's speech engine (${tts.id}).${hint} ` +
      `Its voices include ${named.join(', ')}; GET /list-voices lists all ${tts.voices.length}. ` +
      "A Retell voice id (e.g. 11labs-Adrian) is taken when a configured provider has that voice; none here has it." +
      unconfiguredProvider(tts.voices, voiceId),
    details: { field, provider: tts.id, voices: named },
  };
}
