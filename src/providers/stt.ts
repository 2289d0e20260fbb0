/**
 * Speech-to-text. Audio is 16 kHz 16-bit mono PCM. A stream is opened per call and carries
 * utterances one after another: `write()` appends audio of the current utterance, `finalize()`
 * ends it and resolves with its final text; the next `write()` starts the next utterance.
 * Implementations may overlap: audio of utterance N+1 may be written while N is finalizing.
 */
export interface SttResult {
  /** Final text of the utterance; '' when nothing was recognised. */
  readonly text: string;
}

export interface SttStream {
  /** Appends audio of the current utterance. Never blocks; implementations bound their buffers. */
  write(pcm: Int16Array): void;
  /** Ends the current utterance. Rejects with a ProviderError (kind 'asr') on failure. */
  finalize(signal?: AbortSignal): Promise<SttResult>;
  /** Idempotent; abandons any utterance in progress. */
  close(): Promise<void>;
}

export interface SttOpenOptions {
  /** BCP-47 language tag, one the provider's `languages()` takes; default the provider's own (embedded recogniser: 'en-US' only). */
  language?: string;
  signal?: AbortSignal;
}

export interface SttProvider {
  /** Stable name for doctor output and logs, e.g. 'pocketsphinx'. */
  readonly id: string;
  /**
   * Languages the recogniser takes, as src/lib/language-tags.ts reads them: exact tags ('en-US'),
   * primary subtags ('fr': any French) or '*' (any tag; the service judges it).
   */
  languages(): readonly string[];
  /** Opens a per-call stream; rejects with a ProviderError (kind 'asr') when the engine is unavailable. */
  openStream(options?: SttOpenOptions): Promise<SttStream>;
  /** Releases shared resources (idempotent). */
  close?(): Promise<void>;
}
