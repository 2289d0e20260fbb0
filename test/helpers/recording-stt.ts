// A recogniser that records what reaches it (the options it was opened with, the length of every
// piece of audio written) and hands everything on to a real one: the tests of the telephone band
// assert on what the recogniser was given, not on what the server meant to give it.
import type { SttOpenOptions, SttProvider, SttStream } from '../../src/providers/stt.ts';

export class RecordingStt implements SttProvider {
  readonly id: string;
  readonly capabilities: SttProvider['capabilities'];
  /** The options of every stream opened, in order. */
  readonly opened: SttOpenOptions[] = [];
  /** The length of every write, in samples, over every stream. */
  readonly writes: number[] = [];
  readonly #inner: SttProvider;

  /** `capabilities`: what it states instead of the inner recogniser's (e.g. the rate a phone call hands it). */
  constructor(inner: SttProvider, capabilities: SttProvider['capabilities'] = inner.capabilities) {
    this.#inner = inner;
    this.id = inner.id;
    this.capabilities = capabilities;
  }

  languages(): readonly string[] {
    return this.#inner.languages();
  }

  async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    this.opened.push(options);
    const stream = await this.#inner.openStream(options);
    return {
      write: (pcm) => {
        this.writes.push(pcm.length);
        stream.write(pcm);
      },
      finalize: (signal) => stream.finalize(signal),
      close: () => stream.close(),
      ...(stream.bias ? { bias: (phrases: readonly string[]) => stream.bias?.(phrases) } : {}),
      ...(stream.expect ? { expect: (e: Parameters<NonNullable<SttStream['expect']>>[0]) => stream.expect?.(e) } : {}),
      ...(stream.pendingMs ? { pendingMs: () => stream.pendingMs?.() ?? 0 } : {}),
    };
  }

  warm(): void {
    this.#inner.warm?.();
  }

  capacity(): { open: number; max: number } | undefined {
    return this.#inner.capacity?.();
  }

  async close(): Promise<void> {
    await this.#inner.close?.();
  }
}
