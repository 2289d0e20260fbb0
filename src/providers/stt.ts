/**
 * Speech-to-text. Audio is 16-bit mono PCM at 16 kHz (or SttOpenOptions.sampleRateHz). A stream is opened per call and carries
 * utterances one after another: `write()` appends audio of the current utterance, `finalize()`
 * ends it and resolves with its final text; the next `write()` starts the next utterance.
 * Implementations may overlap: audio of utterance N+1 may be written while N is finalizing.
 *
 * Streaming recognisers also report interim hypotheses while the utterance is spoken, through
 * `SttOpenOptions.onInterim`: each is the whole text heard so far of the current utterance (not a
 * delta), may be revised by the next, and is never ''. Recognisers that only decode at the end
 * (batch transcription) report none; consumers must work without them.
 */
export interface SttResult {
  /** Final text of the utterance; '' when nothing was recognised. */
  readonly text: string;
  /**
   * The words with their times, where the recogniser gives them: ms from the first sample of the
   * utterance written to the stream (the pipeline places them on the call's timeline). Absent
   * where it gives none.
   */
  readonly words?: readonly SttWord[];
}

/** One recognised word and when it was said, ms from the start of its utterance's audio. */
export interface SttWord {
  readonly word: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** Words kept per utterance at most (a recogniser's answer is a peer's: bounded). */
export const MAX_WORDS_PER_UTTERANCE = 1_000;

export interface SttStream {
  /** Appends audio of the current utterance. Never blocks; implementations bound their buffers. */
  write(pcm: Int16Array): void;
  /** Ends the current utterance. Rejects with a ProviderError (kind 'asr') on failure. */
  finalize(signal?: AbortSignal): Promise<SttResult>;
  /** Idempotent; abandons any utterance in progress. */
  close(): Promise<void>;
  /**
   * The words and short phrases expected in the next utterances (lower case, e.g. the keywords
   * the agent branches on), replacing those given before; [] clears them. Applies from the next
   * utterance that starts after the call (not to one already being written). Optional: engines
   * that cannot change their vocabulary during a stream omit it and use SttOpenOptions.keywords.
   */
  bias?(phrases: readonly string[]): void;
  /**
   * Directed recognition: what the next utterances are expected to be (SttExpectation), replacing
   * what was given before, from the next utterance that starts after the call, as bias() does and
   * in its place. A recogniser that can decode against a grammar does so while the expectation is
   * closed, and must still report speech outside it as heard (so the flow's else edge stays
   * reachable). Optional: recognisers without it get bias(expectation.phrases).
   */
  expect?(expectation: SttExpectation): void;
  /**
   * Audio written but not decoded yet, ms: how far the interim hypotheses lag the audio. Optional:
   * streaming recognisers that can tell implement it; the adaptive end of turn judges the interim
   * text only once the recogniser has decoded past the end of the speech (docs/voice-pipeline.md).
   */
  pendingMs?(): number;
}

/** An interim hypothesis: the text heard so far of the utterance being spoken. */
export interface SttInterim {
  /** Whole text so far of the current utterance (not a delta); never ''. */
  readonly text: string;
}

/** Values a flow node extracts whose words are a closed set (src/voice/engines/expected.ts TYPE_PHRASES). */
export type ExpectedValue = 'yes_no' | 'digits' | 'number';

/**
 * What the caller is expected to say next (SttStream.expect). `closed`: the node acts only on
 * these (its keyword edges, values of the closed types it extracts, the agent's boosted
 * keywords); anything else takes its else edge. Open expectations (a prompt edge, an LLM, free
 * text) only bias an open vocabulary.
 */
export interface SttExpectation {
  readonly closed: boolean;
  /** Keywords and short phrases, lower case, as SttStream.bias() takes them. */
  readonly phrases: readonly string[];
  /** Closed-set values expected besides the phrases: one of yes/no, a digit string, a number. */
  readonly values: readonly ExpectedValue[];
  /** How many digits the digit string has, when the node states it (and expects no number). */
  readonly digitCount?: DigitCount;
}

/** How many digits a value has, both ends included (a digits variable's min_digits, max_digits). */
export interface DigitCount {
  readonly min: number;
  readonly max: number;
}

export interface SttOpenOptions {
  /** BCP-47 language tag, one the provider's `languages()` takes; default the provider's own (embedded recogniser: 'en-US' only). */
  language?: string;
  signal?: AbortSignal;
  /**
   * Called with each interim hypothesis of the utterance being written, in order, and only until
   * its finalize() is called (a hypothesis that was still on its way then is dropped, never
   * attributed to the next utterance). Never called after close(). Implementations that cannot
   * produce interim hypotheses ignore it.
   */
  onInterim?: (interim: SttInterim) => void;
  /**
   * Words and short phrases to expect for the whole call (an agent's boosted_keywords and what it
   * expects first), lower case, at most 100. Engines that take keywords only when a stream opens
   * (Deepgram) use these; the others treat them as a bias() that stays under every later one.
   */
  keywords?: readonly string[];
  /**
   * Sample rate of the audio write() takes, Hz: 8000 (a telephone-band transport sending what it
   * received) or 16000; default 16000. A recogniser that decodes 8 kHz natively says so in
   * SttCapabilities.inputSampleRates; the others are given 16 kHz.
   */
  sampleRateHz?: 8000 | 16000;
  /**
   * The rate the caller's audio came at, where write() is given it resampled to sampleRateHz: 8000
   * for a telephone-band call whose audio a wideband recogniser takes as a 16 kHz copy
   * (src/voice/call-rate.ts). Such audio has nothing above 4 kHz; a recogniser may start from what
   * that channel sounds like (PocketSphinx: its cepstral mean) instead of learning it from the
   * caller's first words. Default: sampleRateHz.
   */
  sourceSampleRateHz?: 8000 | 16000;
}

/**
 * What a recogniser can do. Its descriptor states it from the options (src/providers/catalog.ts),
 * and the provider itself at run time (SttProvider.capabilities); a feature that needs one reads
 * it here instead of asking which engine runs.
 */
export interface SttCapabilities {
  /** Audio is decoded while it arrives, not only once the utterance has ended. */
  readonly streaming: boolean;
  /** Interim hypotheses are reported while an utterance is spoken (SttOpenOptions.onInterim). */
  readonly interimResults: boolean;
  /**
   * How expected phrases reach the engine: 'runtime' (SttStream.bias() during the stream, over
   * SttOpenOptions.keywords), 'open-only' (SttOpenOptions.keywords when the stream opens), 'none'.
   */
  readonly biasing: 'runtime' | 'open-only' | 'none';
  /** The languages it recognises, as `languages()` gives them. */
  readonly languages: readonly string[];
  /**
   * Sample rates the engine decodes natively, Hz, or 'any' (it is told the rate). SttStream.write()
   * takes 16 kHz unless the stream was opened with SttOpenOptions.sampleRateHz, one of these.
   */
  readonly inputSampleRates: readonly number[] | 'any';
  /**
   * The rate a telephone-band call (8 kHz) hands it audio at: 8000, the audio as it came, or
   * 16000, an upsampled copy for its wideband decoder where that was measured to hear phone calls
   * better than its own 8 kHz decoding (PocketSphinx: BENCHMARKS.md, "The telephone band end to
   * end"). Absent: 8000 where it decodes 8 kHz natively (inputSampleRates), else 16000.
   */
  readonly telephoneRate?: 8000 | 16000;
  /** How well it hears telephone-band audio (8 kHz channels: phone lines, hands-free Bluetooth). */
  readonly telephoneBand: 'poor' | 'good';
  /** One line for an operator about telephone-band callers on this recogniser. */
  readonly telephoneBandAdvice: string;
}

export interface SttProvider {
  /** Stable name for doctor output and logs, e.g. 'pocketsphinx'. */
  readonly id: string;
  /**
   * What it can do as it runs here (PocketSphinx gives interim results only when its library
   * loads). Optional for recognisers built outside the catalog (tests, embedders): a feature that
   * needs a capability treats a recogniser that states none as lacking it.
   */
  readonly capabilities?: SttCapabilities;
  /**
   * Languages the recogniser takes, as src/lib/language-tags.ts reads them: exact tags ('en-US'),
   * primary subtags ('fr': any French) or '*' (any tag; the service judges it).
   */
  languages(): readonly string[];
  /** Opens a per-call stream; rejects with a ProviderError (kind 'asr') when the engine is unavailable. */
  openStream(options?: SttOpenOptions): Promise<SttStream>;
  /**
   * Loads what the first call would otherwise wait for (PocketSphinx: its warm decoders), in the
   * background; the server calls it once it listens. Optional, never throws.
   */
  warm?(): void;
  /**
   * How many streams are open and how many it takes at once, where it bounds them (the embedded
   * recogniser: POCKETSPHINX_MAX_STREAMS); absent or undefined: no bound here. New calls are
   * refused while it is full (src/services/call-record.ts), before anything is created.
   */
  capacity?(): { open: number; max: number } | undefined;
  /** Releases shared resources (idempotent). */
  close?(): Promise<void>;
}
