import type { ProviderDescriptor, ProviderRole } from './descriptor.ts';
import { assemblyAiStt } from './assemblyai/assemblyai.descriptor.ts';
import { cartesiaTts } from './cartesia/cartesia.descriptor.ts';
import { deepgramStt } from './deepgram/deepgram.descriptor.ts';
import { energyVad, fakeLlm, fakeStt, fakeTts } from './fake/fake.descriptors.ts';
import { elevenLabsTts } from './elevenlabs/elevenlabs.descriptor.ts';
import { fliteTts } from './flite/flite.descriptor.ts';
import { openAiChatLlm } from './openai/chat.descriptor.ts';
import { openAiSpeechTts } from './openai/speech.descriptor.ts';
import { openAiTranscriptionStt } from './openai/transcription.descriptor.ts';
import { pocketsphinxStt } from './pocketsphinx/pocketsphinx.descriptor.ts';
import { fvadVad } from './vad/fvad.descriptor.ts';

/**
 * Every provider, one line each, by role. A role's order is the order configuration errors list
 * its choices in ("STT_PROVIDER must be one of ...") and `cli doctor` reports them. Adding a
 * provider: its folder (implementation and descriptor) and its line here (docs/architecture.md).
 */
export const CATALOG: { readonly [R in ProviderRole]: readonly ProviderDescriptor<R>[] } = {
  stt: [
    pocketsphinxStt,
    openAiTranscriptionStt,
    deepgramStt,
    assemblyAiStt,
    fakeStt,
  ],
  tts: [
    fliteTts,
    openAiSpeechTts,
    elevenLabsTts,
    cartesiaTts,
    fakeTts,
  ],
  vad: [
    fvadVad,
    energyVad,
  ],
  llm: [
    openAiChatLlm,
    fakeLlm,
  ],
};

/**
 * The provider of each role its variable picks when unset (STT_PROVIDER, TTS_PROVIDER,
 * VAD_PROVIDER): the embedded engines, which need no keys and no network. The LLM has none: no
 * LLM unless one is configured (see ProviderDescriptor.enabledBy).
 */
export const DEFAULT_PROVIDERS = { stt: 'pocketsphinx', tts: 'flite', vad: 'fvad' } as const;

/** The descriptor of `role` named `id`; throws when the catalog has none (ids come from configuration, which checks them). */
export function descriptorFor<R extends ProviderRole>(role: R, id: string): ProviderDescriptor<R> {
  const found = CATALOG[role].find((d) => d.id === id);
  if (!found) throw new Error(`no ${role} provider "${id}" in the catalog`);
  return found;
}
