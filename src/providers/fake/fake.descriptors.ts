import type { NoOptions, ProviderDescriptor } from '../descriptor.ts';
import type { LlmCapabilities } from '../llm.ts';
import type { VadCapabilities } from '../vad.ts';
import { EnergyVad, FakeLlm, FakeStt, FakeTts, fakeSttCapabilities, fakeTtsCapabilities } from './fake.providers.ts';

/**
 * The scripted fakes as configuration reaches them (STT_PROVIDER=fake, TTS_PROVIDER=fake,
 * VAD_PROVIDER=energy; the fake LLM only from code), for tests and the benchmark: they read no
 * variables and need no engine; only the fake LLM has a doctor line (saying it is scripted).
 */

export const fakeStt: ProviderDescriptor<'stt', NoOptions> = {
  id: 'fake',
  role: 'stt',
  fromConfig: () => ({}),
  create: () => new FakeStt(),
  capabilities: () => fakeSttCapabilities(),
  doctor: async () => [],
};

export const fakeTts: ProviderDescriptor<'tts', NoOptions> = {
  id: 'fake',
  role: 'tts',
  fromConfig: () => ({}),
  create: () => new FakeTts(),
  capabilities: () => fakeTtsCapabilities(),
  doctor: async () => [],
};

/** Scripted answers streamed word by word; scripted tool calls. */
const FAKE_LLM_CAPABILITIES: LlmCapabilities = { streaming: true, tools: true };

export const fakeLlm: ProviderDescriptor<'llm', NoOptions> = {
  id: 'fake',
  role: 'llm',
  fromConfig: () => ({}),
  create: () => new FakeLlm(),
  capabilities: () => FAKE_LLM_CAPABILITIES,
  async doctor(options) {
    return options ? [{ engine: 'llm', role: 'llm', selected: true, available: true, detail: 'scripted fake' }] : [];
  },
};

/** A level threshold over any frame; VadOptions do not apply. */
const ENERGY_CAPABILITIES: VadCapabilities = { inputSampleRates: [8_000, 16_000], tunable: false };

/** VAD_PROVIDER=energy: speech when a frame's level passes a threshold (tests, the benchmark). */
export const energyVad: ProviderDescriptor<'vad', NoOptions> = {
  id: 'energy',
  role: 'vad',
  fromConfig: () => ({}),
  create: () => new EnergyVad(),
  capabilities: () => ENERGY_CAPABILITIES,
  doctor: async () => [],
};
