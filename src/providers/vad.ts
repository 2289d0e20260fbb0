/** Frame-level voice activity: mono PCM frames of 10, 20 or 30 ms at the rate the detector was created for (VadOptions.sampleRateHz). */
export interface VoiceActivityDetector {
  /** True when the frame holds speech. Synchronous and cheap (called 50 times a second per call). */
  isSpeech(frame: Int16Array): boolean;
  /** Idempotent. */
  close(): void;
}

export interface VadOptions {
  /** WebRTC VAD aggressiveness 0..3 (3 rejects the most non-speech); default 2. */
  aggressiveness?: 0 | 1 | 2 | 3;
  /** Leading frames judged non-speech while the detector adapts to the line; default 10 (200 ms at 20 ms). */
  warmupFrames?: number;
  /** Rate of the frames isSpeech() is given, Hz: 8000 (a telephone-band call) or 16000, the default. */
  sampleRateHz?: 8000 | 16000;
}

/** What a voice activity detector can do (its descriptor states it; see SttCapabilities). */
export interface VadCapabilities {
  /** Sample rates it judges natively, Hz (VadOptions.sampleRateHz); a detector that ignores the rate (energy) lists both. */
  readonly inputSampleRates: readonly number[];
  /** VadOptions (aggressiveness, warm-up) apply; false: the detector ignores them. */
  readonly tunable: boolean;
}

export interface VadProvider {
  readonly id: string;
  create(options?: VadOptions): Promise<VoiceActivityDetector>;
}
