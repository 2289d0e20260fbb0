import type { LlmProvider } from './llm.ts';
import type { SttProvider } from './stt.ts';
import type { TtsProvider } from './tts.ts';
import type { VadProvider } from './vad.ts';
import { FliteTts } from './flite/flite.tts.ts';
import { PocketsphinxStt, type PocketsphinxOptions } from './pocketsphinx/pocketsphinx.stt.ts';
import { OpenAiChatLlm, type OpenAiChatOptions } from './openai/chat.llm.ts';
import { OpenAiTranscriptionStt, type OpenAiTranscriptionOptions } from './openai/transcription.stt.ts';
import { OpenAiSpeechTts, type OpenAiSpeechOptions } from './openai/speech.tts.ts';
import { DeepgramStt, type DeepgramOptions } from './deepgram/deepgram.stt.ts';
import { FakeLlm, FakeStt, FakeTts, EnergyVad } from './fake/fake.providers.ts';
import { FvadProvider } from './vad/fvad.ts';

/**
 * Which engines the server uses; plain data, mapped from configuration by the composition root.
 * Embedded defaults need no keys and no network: stt 'pocketsphinx', tts 'flite', vad 'fvad'.
 */
export interface ProviderOptions {
  llm?: OpenAiChatOptions | 'fake';
  stt?: 'pocketsphinx' | 'fake' | { pocketsphinx: PocketsphinxOptions } | { openai: OpenAiTranscriptionOptions } | { deepgram: DeepgramOptions };
  tts?: 'flite' | 'fake' | { openai: OpenAiSpeechOptions };
  vad?: 'fvad' | 'energy';
}

export interface Providers {
  /** Undefined when no LLM is configured (flows that need one are refused: see flowNeedsLlm). */
  llm: LlmProvider | undefined;
  stt: SttProvider;
  tts: TtsProvider;
  vad: VadProvider;
  /** Closes providers that hold shared resources (the Flite worker); idempotent. */
  close(): Promise<void>;
}

/**
 * What the engines offer agents, for the agent checks and GET /list-voices (the shape of
 * src/domain/voice.ts's SpeechCatalog; providers do not import the domain, the composition root
 * hands one to the other).
 */
export function speechCatalog(providers: Pick<Providers, 'stt' | 'tts'>) {
  const { stt, tts } = providers;
  return {
    recogniser: { id: stt.id, languages: stt.languages() },
    synthesiser: { id: tts.id, languages: tts.languages(), voices: tts.voices(), defaultVoiceId: tts.defaultVoiceId },
  };
}

/** Builds the providers; never fails for a missing engine (see doctor()): calls fail with a reason instead. */
export function buildProviders(options: ProviderOptions = {}): Providers {
  const llm = options.llm === undefined ? undefined : options.llm === 'fake' ? new FakeLlm() : new OpenAiChatLlm(options.llm);
  const s = options.stt ?? 'pocketsphinx';
  const stt: SttProvider =
    s === 'pocketsphinx' ? new PocketsphinxStt()
    : s === 'fake' ? new FakeStt()
    : 'pocketsphinx' in s ? new PocketsphinxStt(s.pocketsphinx)
    : 'openai' in s ? new OpenAiTranscriptionStt(s.openai)
    : new DeepgramStt(s.deepgram);
  const t = options.tts ?? 'flite';
  const tts: TtsProvider = t === 'flite' ? new FliteTts() : t === 'fake' ? new FakeTts() : new OpenAiSpeechTts(t.openai);
  const vad: VadProvider = (options.vad ?? 'fvad') === 'fvad' ? new FvadProvider() : new EnergyVad();
  let closed = false;
  return {
    llm,
    stt,
    tts,
    vad,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([tts.close?.(), stt.close?.()]);
    },
  };
}
