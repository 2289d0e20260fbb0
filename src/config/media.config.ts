import type { EnvReader } from './env-reader.ts';
import { CATALOG, DEFAULT_PROVIDERS, descriptorFor } from '../providers/catalog.ts';
import type { ProviderChoice, ProviderOptions } from '../providers/registry.ts';

/**
 * Speech and language engines of the server (see docs/voice-pipeline.md). Plain data: the
 * composition root turns it into providers. Each provider reads its own variables (its descriptor,
 * listed in src/providers/catalog.ts); this table is all of them:
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | LLM_BASE_URL | (none: no LLM) | OpenAI-compatible chat-completions base URL, e.g. https://api.openai.com/v1 |
 * | LLM_API_KEY | (none) | Bearer key of the LLM endpoint |
 * | LLM_MODEL | gpt-4o-mini | model when the agent names none |
 * | LLM_TIMEOUT_MS | 10000 | per request, until the answer's headers and while it streams; 2 retries on timeouts and 5xx |
 * | STT_PROVIDER | pocketsphinx | pocketsphinx, openai (transcription endpoint), deepgram (streaming), assemblyai (streaming), fake |
 * | STT_BASE_URL | openai: required; deepgram: wss://api.deepgram.com/v1/listen; assemblyai: wss://streaming.assemblyai.com/v3/ws | recogniser endpoint |
 * | STT_API_KEY | (none) | recogniser key |
 * | STT_MODEL | openai: whisper-1; deepgram: (none); assemblyai: universal-streaming-english | recogniser model |
 * | STT_TIMEOUT_MS | 5000 | longest wait for a turn's transcript after the turn ends; then the call ends with error_asr |
 * | PROVIDER_PROBE_TIMEOUT_MS | 3000 | the doctor's bound on asking a remote provider's endpoint; 0 asks none |
 * | TTS_PROVIDER | flite | flite (embedded), openai (speech endpoint), elevenlabs (stream-input WebSocket), cartesia (WebSocket), fake |
 * | TTS_BASE_URL | openai: required; elevenlabs: wss://api.elevenlabs.io; cartesia: wss://api.cartesia.ai/tts/websocket | speech endpoint base URL |
 * | TTS_API_KEY | (none) | speech endpoint key |
 * | TTS_MODEL | openai: tts-1; elevenlabs: eleven_flash_v2_5; cartesia: sonic-2 | speech model |
 * | TTS_VOICE | openai: alloy; elevenlabs: 11labs-Sarah; cartesia: cartesia-f786b574-daa5-4673-aa0c-cbe3e8534c02 | voice of agents created without voice_id (GET /list-voices offers it with OpenAI's) |
 * | TTS_VOICES | (none) | elevenlabs, cartesia: the account's own voices, Name=voice-id,... (offered as 11labs-Name, cartesia-voice-id) |
 * | TTS_API_VERSION | 2025-04-16 | cartesia: the Cartesia-Version header |
 * | TTS_STREAMING_LATENCY | 3 | elevenlabs: optimize_streaming_latency, 0 (none) to 4 (most) |
 * | TTS_EXTRA_PROVIDERS | (none) | more speech providers beside TTS_PROVIDER (flite, openai, elevenlabs, cartesia), each reading its TTS_* variables as TTS_<ID>_* (TTS_CARTESIA_API_KEY); agents' voice_id and fallback_voice_ids may name their voices |
 * | VAD_PROVIDER | fvad | fvad (WebRTC VAD) or energy (a plain level threshold) |
 */
export interface MediaConfig {
  readonly providers: ProviderOptions;
  /**
   * Issue 28: the embedded recogniser and synthesiser with their options (the configured ones when
   * they are those): agent tests in audio mode run on them unless a case names other providers.
   */
  readonly embedded: { readonly stt: ProviderChoice; readonly tts: ProviderChoice };
  /**
   * Longest wait for a turn's transcript once the turn has ended (STT_TIMEOUT_MS), ms; default
   * 5000, the voice pipeline's own default. A recogniser silent for longer ends the call with
   * `error_asr` rather than leaving the agent silent.
   */
  readonly recognitionTimeoutMs: number;
  /**
   * How long the doctor (start-up and `cli doctor`) waits for a remote provider's endpoint
   * (PROVIDER_PROBE_TIMEOUT_MS), ms; default 3000; 0 asks no endpoint (the keys are still checked).
   */
  readonly providerProbeTimeoutMs: number;
}

/** The variable that picks each role's provider (the LLM has none: see ProviderDescriptor.enabledBy). */
const PICKED_BY = { stt: 'STT_PROVIDER', tts: 'TTS_PROVIDER', vad: 'VAD_PROVIDER' } as const;

/**
 * Reads the engines' variables: each role's provider is the descriptor its variable names (in
 * src/providers/catalog.ts), which reads its own variables; every problem goes to `problems`.
 */
export function readMediaConfig(reader: EnvReader, problems: string[]): MediaConfig {
  const llm = CATALOG.llm.find((d) => d.enabledBy !== undefined && reader.optional(d.enabledBy) !== null);
  const llmChoice = llm ? { llm: { id: llm.id, options: llm.fromConfig(reader, problems) } } : {};
  const stt = pick('stt', reader, problems);
  const tts = pick('tts', reader, problems);
  const ttsExtra = extraSpeech(tts.id, reader, problems);
  const providers: ProviderOptions = {
    ...llmChoice,
    stt,
    tts,
    ...(ttsExtra.length > 0 ? { ttsExtra } : {}),
    vad: pick('vad', reader, problems),
  };
  const embedded = (role: 'stt' | 'tts'): ProviderChoice => {
    const id = DEFAULT_PROVIDERS[role];
    return providers[role].id === id ? providers[role] : { id, options: descriptorFor(role, id).fromConfig(reader, problems) };
  };
  return {
    providers,
    embedded: { stt: embedded('stt'), tts: embedded('tts') },
    recognitionTimeoutMs: reader.integer('STT_TIMEOUT_MS', 5_000, 500, 120_000),
    providerProbeTimeoutMs: reader.integer('PROVIDER_PROBE_TIMEOUT_MS', 3_000, 0, 30_000),
  };
}

/** The provider of `role` its variable names (default DEFAULT_PROVIDERS[role]), with its options. */
function pick(role: keyof typeof PICKED_BY, reader: EnvReader, problems: string[]): ProviderChoice {
  const ids = CATALOG[role].map((d) => d.id);
  const id = reader.oneOf(PICKED_BY[role], DEFAULT_PROVIDERS[role], ids);
  return { id, options: descriptorFor(role, id).fromConfig(reader, problems) };
}

/**
 * TTS_EXTRA_PROVIDERS: speech providers beside TTS_PROVIDER, each reading its own variables as
 * `TTS_<ID>_*` (TTS_ELEVENLABS_API_KEY for TTS_API_KEY); their problems are named that way.
 */
function extraSpeech(primary: string, reader: EnvReader, problems: string[]): ProviderChoice[] {
  const ids = CATALOG.tts.map((d) => d.id);
  const out: ProviderChoice[] = [];
  for (const id of reader.list('TTS_EXTRA_PROVIDERS')) {
    if (!ids.includes(id)) problems.push(`TTS_EXTRA_PROVIDERS must list speech providers among ${ids.join(', ')} (got "${id}")`);
    else if (id === primary || out.some((c) => c.id === id)) problems.push(`TTS_EXTRA_PROVIDERS names ${id} twice (TTS_PROVIDER is ${primary})`);
    else {
      const scope = `TTS_${id.toUpperCase()}_`;
      const own: string[] = [];
      out.push({ id, options: descriptorFor('tts', id).fromConfig(reader.scoped('TTS_', scope, own), own) });
      // The descriptor names its variables as TTS_PROVIDER's; here they are its own.
      problems.push(...own.map((p) => p.replace(/\bTTS_(?!PROVIDER\b)([A-Z_]+)/g, `${scope}$1`).replace(/\bTTS_PROVIDER=(\w+)/g, '$1 in TTS_EXTRA_PROVIDERS')));
    }
  }
  return out;
}
