import type { Logger } from '../lib/logger.ts';
import { isAbortError } from './errors.ts';
import type { ChatRequest, LlmProvider } from './llm.ts';
import type { Providers } from './registry.ts';
import type { SttOpenOptions, SttProvider, SttStream } from './stt.ts';
import type { TtsOptions, TtsProvider, TtsTextStream } from './tts.ts';
import type { VadProvider } from './vad.ts';

/**
 * The providers of a process, each failure logged once at warn with the provider's id, its kind
 * and HTTP status (a caller's abort is not a failure). Errors still reach the caller unchanged:
 * the pipeline decides what a failure does to the call. `log` is the `providers` component's logger.
 */
export function logProviderFailures(providers: Providers, log: Logger): Providers {
  return {
    llm: providers.llm && loggedLlm(providers.llm, log.child({ provider: providers.llm.id })),
    stt: loggedStt(providers.stt, log.child({ provider: providers.stt.id })),
    tts: loggedTts(providers.tts, log.child({ provider: providers.tts.id })),
    vad: loggedVad(providers.vad, log),
    ...(providers.denoiser ? { denoiser: providers.denoiser } : {}),
    close: () => providers.close(),
  };
}

function report(log: Logger, operation: string, error: unknown): void {
  if (isAbortError(error)) return;
  const e = error as { kind?: unknown; status?: unknown; retryable?: unknown };
  log.warn({ operation, kind: e.kind, status: e.status, retryable: e.retryable, err: error }, 'provider failed');
}

/** The members of T that may be absent. */
type OptionalKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

/**
 * How each optional member of a recognition stream is forwarded, when the stream has it. Every
 * optional member of SttStream must be here (the type says so): a stream that implements one
 * must not lose it to the wrapper, as `pendingMs` once was, which left the adaptive end of turn
 * blind to how far the recogniser lagged.
 */
const OPTIONAL_STREAM_MEMBERS: { [K in OptionalKeys<SttStream>]-?: (stream: SttStream) => Pick<SttStream, K> | undefined } = {
  bias: (stream) => (stream.bias ? { bias: (phrases) => stream.bias!(phrases) } : undefined),
  expect: (stream) => (stream.expect ? { expect: (expectation) => stream.expect!(expectation) } : undefined),
  pendingMs: (stream) => (stream.pendingMs ? { pendingMs: () => stream.pendingMs!() } : undefined),
};

function loggedStt(stt: SttProvider, log: Logger): SttProvider {
  const wrapStream = (stream: SttStream): SttStream => {
    const wrapped: SttStream = {
      write: (pcm) => stream.write(pcm),
      finalize: (signal) =>
        stream.finalize(signal).catch((error: unknown) => {
          report(log, 'finalize', error);
          throw error;
        }),
      close: () => stream.close(),
    };
    for (const forward of Object.values(OPTIONAL_STREAM_MEMBERS)) Object.assign(wrapped, forward(stream));
    return wrapped;
  };
  return {
    id: stt.id,
    // A getter: PocketSphinx's depend on its decoder mode, known once its library is probed.
    get capabilities() {
      return stt.capabilities;
    },
    languages: () => stt.languages(),
    openStream: (options?: SttOpenOptions) =>
      stt.openStream(options).then(wrapStream, (error: unknown) => {
        report(log, 'open', error);
        throw error;
      }),
    ...(stt.warm ? { warm: () => stt.warm!() } : {}),
    ...(stt.capacity ? { capacity: () => stt.capacity!() } : {}),
    ...(stt.close ? { close: () => stt.close!() } : {}),
  };
}

function loggedTts(tts: TtsProvider, log: Logger): TtsProvider {
  return {
    id: tts.id,
    get capabilities() {
      return tts.capabilities;
    },
    defaultVoiceId: tts.defaultVoiceId,
    voices: () => tts.voices(),
    languages: () => tts.languages(),
    async *synthesize(text: string, options?: TtsOptions) {
      try {
        yield* tts.synthesize(text, options);
      } catch (error) {
        report(log, 'synthesize', error);
        throw error;
      }
    },
    ...(tts.openTextStream ? { openTextStream: (options: TtsOptions) => loggedTextStream(tts.openTextStream!(options), log) } : {}),
    ...(tts.close ? { close: () => tts.close!() } : {}),
  };
}

function loggedTextStream(stream: TtsTextStream | undefined, log: Logger): TtsTextStream | undefined {
  if (!stream) return undefined;
  return {
    write: (text) => stream.write(text),
    flush: () => stream.flush(),
    end: () => stream.end(),
    words: () => stream.words(),
    async *audio() {
      try {
        yield* stream.audio();
      } catch (error) {
        report(log, 'stream', error);
        throw error;
      }
    },
  };
}

function loggedLlm(llm: LlmProvider, log: Logger): LlmProvider {
  return {
    id: llm.id,
    async *chat(request: ChatRequest) {
      try {
        yield* llm.chat(request);
      } catch (error) {
        report(log, 'chat', error);
        throw error;
      }
    },
  };
}

function loggedVad(vad: VadProvider, log: Logger): VadProvider {
  return {
    id: vad.id,
    create: (options) =>
      vad.create(options).catch((error: unknown) => {
        report(log.child({ provider: vad.id }), 'create', error);
        throw error;
      }),
  };
}
