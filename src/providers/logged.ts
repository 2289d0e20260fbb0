import type { Logger } from '../lib/logger.ts';
import { isAbortError } from './errors.ts';
import type { ChatRequest, LlmProvider } from './llm.ts';
import type { Providers } from './registry.ts';
import type { SttOpenOptions, SttProvider, SttStream } from './stt.ts';
import type { TtsOptions, TtsProvider } from './tts.ts';
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
    close: () => providers.close(),
  };
}

function report(log: Logger, operation: string, error: unknown): void {
  if (isAbortError(error)) return;
  const e = error as { kind?: unknown; status?: unknown; retryable?: unknown };
  log.warn({ operation, kind: e.kind, status: e.status, retryable: e.retryable, err: error }, 'provider failed');
}

function loggedStt(stt: SttProvider, log: Logger): SttProvider {
  const wrapStream = (stream: SttStream): SttStream => ({
    write: (pcm) => stream.write(pcm),
    finalize: (signal) =>
      stream.finalize(signal).catch((error: unknown) => {
        report(log, 'finalize', error);
        throw error;
      }),
    close: () => stream.close(),
    ...(stream.bias ? { bias: (phrases: readonly string[]) => stream.bias!(phrases) } : {}),
  });
  return {
    id: stt.id,
    languages: () => stt.languages(),
    openStream: (options?: SttOpenOptions) =>
      stt.openStream(options).then(wrapStream, (error: unknown) => {
        report(log, 'open', error);
        throw error;
      }),
    ...(stt.close ? { close: () => stt.close!() } : {}),
  };
}

function loggedTts(tts: TtsProvider, log: Logger): TtsProvider {
  return {
    id: tts.id,
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
    ...(tts.close ? { close: () => tts.close!() } : {}),
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
