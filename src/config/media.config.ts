import type { EnvReader } from './env-reader.ts';
import type { ProviderOptions } from '../providers/registry.ts';

/**
 * Speech and language engines of the server (see docs/voice-pipeline.md). Plain data: the
 * composition root turns it into providers.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | LLM_BASE_URL | (none: no LLM) | OpenAI-compatible chat-completions base URL, e.g. https://api.openai.com/v1 |
 * | LLM_API_KEY | (none) | Bearer key of the LLM endpoint |
 * | LLM_MODEL | gpt-4o-mini | model when the agent names none |
 * | LLM_TIMEOUT_MS | 10000 | per request, until the answer's headers and while it streams; 2 retries on timeouts and 5xx |
 * | STT_PROVIDER | pocketsphinx | pocketsphinx, openai (transcription endpoint), deepgram (streaming), fake |
 * | STT_BASE_URL | openai: required; deepgram: wss://api.deepgram.com/v1/listen | recogniser endpoint |
 * | STT_API_KEY | (none) | recogniser key |
 * | STT_MODEL | openai: whisper-1; deepgram: (none) | recogniser model |
 * | STT_TIMEOUT_MS | 5000 | longest wait for a turn's transcript after the turn ends; then the call ends with error_asr |
 * | TTS_PROVIDER | flite | flite (embedded), openai (speech endpoint), fake |
 * | TTS_BASE_URL | openai: required | speech endpoint base URL |
 * | TTS_API_KEY | (none) | speech endpoint key |
 * | TTS_MODEL | tts-1 | speech model |
 * | TTS_VOICE | alloy | voice of agents created without voice_id (GET /list-voices offers it with OpenAI's) |
 * | VAD_PROVIDER | fvad | fvad (WebRTC VAD) or energy (a plain level threshold) |
 */
export interface MediaConfig {
  readonly providers: ProviderOptions;
  /**
   * Longest wait for a turn's transcript once the turn has ended (STT_TIMEOUT_MS), ms; default
   * 5000, the voice pipeline's own default. A recogniser silent for longer ends the call with
   * `error_asr` rather than leaving the agent silent.
   */
  readonly recognitionTimeoutMs: number;
}

const STT = ['pocketsphinx', 'openai', 'deepgram', 'fake'] as const;
const TTS = ['flite', 'openai', 'fake'] as const;
const VAD = ['fvad', 'energy'] as const;

export function readMediaConfig(reader: EnvReader, problems: string[]): MediaConfig {
  const providers: ProviderOptions = {};
  const llmUrl = reader.optional('LLM_BASE_URL') === null ? null : reader.url('LLM_BASE_URL', '');
  if (llmUrl) {
    providers.llm = {
      baseUrl: llmUrl,
      model: reader.string('LLM_MODEL', 'gpt-4o-mini'),
      timeoutMs: reader.integer('LLM_TIMEOUT_MS', 10_000, 500, 300_000),
      ...apiKey(reader, 'LLM_API_KEY'),
    };
  }

  const stt = reader.oneOf('STT_PROVIDER', 'pocketsphinx', STT);
  if (stt === 'openai') {
    const baseUrl = required(reader, problems, 'STT_BASE_URL', 'STT_PROVIDER=openai');
    providers.stt = { openai: { baseUrl, model: reader.string('STT_MODEL', 'whisper-1'), ...apiKey(reader, 'STT_API_KEY') } };
  } else if (stt === 'deepgram') {
    const url = reader.string('STT_BASE_URL', 'wss://api.deepgram.com/v1/listen');
    if (!/^wss?:\/\/[^\s]+$/.test(url)) problems.push(`STT_BASE_URL must be a ws:// or wss:// URL with STT_PROVIDER=deepgram (got "${url}")`);
    const model = reader.optional('STT_MODEL');
    providers.stt = { deepgram: { url, ...(model ? { model } : {}), ...apiKey(reader, 'STT_API_KEY') } };
  } else {
    providers.stt = stt;
  }

  const tts = reader.oneOf('TTS_PROVIDER', 'flite', TTS);
  if (tts === 'openai') {
    const baseUrl = required(reader, problems, 'TTS_BASE_URL', 'TTS_PROVIDER=openai');
    providers.tts = {
      openai: { baseUrl, model: reader.string('TTS_MODEL', 'tts-1'), defaultVoice: reader.string('TTS_VOICE', 'alloy'), ...apiKey(reader, 'TTS_API_KEY') },
    };
  } else {
    providers.tts = tts;
  }
  providers.vad = reader.oneOf('VAD_PROVIDER', 'fvad', VAD);
  return { providers, recognitionTimeoutMs: reader.integer('STT_TIMEOUT_MS', 5_000, 500, 120_000) };
}

function apiKey(reader: EnvReader, name: string): { apiKey?: string } {
  const key = reader.optional(name);
  return key === null ? {} : { apiKey: key };
}

function required(reader: EnvReader, problems: string[], name: string, why: string): string {
  if (reader.optional(name) === null) {
    problems.push(`${name} is required with ${why}`);
    return '';
  }
  return reader.url(name, '');
}
