/** Text-to-speech. Output is always 16 kHz 16-bit mono PCM (implementations resample). */
export interface TtsOptions {
  /** Provider-specific voice: 'flite-kal16' (default), 'flite-slt', ...; or an OpenAI voice name. */
  voiceId?: string;
  signal?: AbortSignal;
}

export interface TtsProvider {
  readonly id: string;
  /** Synthesizes one piece of text (a sentence, ideally) into PCM chunks; rejects with ProviderError kind 'tts'. */
  synthesize(text: string, options?: TtsOptions): AsyncIterable<Int16Array>;
  /** Releases shared resources (idempotent). */
  close?(): Promise<void>;
}
