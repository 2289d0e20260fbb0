/** Messages between the SDK's main thread and its AudioWorklets (over each node's MessagePort). */

/** Main thread -> capture worklet. */
export type CaptureCommand = { type: 'mute'; muted: boolean } | { type: 'stop' };

/** Capture worklet -> main thread: 16 kHz PCM16 frames, and the input level. */
export type CaptureEvent = { type: 'frame'; pcm: ArrayBuffer; level: number };

/** Main thread -> playback worklet. */
export type PlaybackCommand = { type: 'audio'; pcm: ArrayBuffer } | { type: 'clear' } | { type: 'stop' };

/** Playback worklet -> main thread: counters, and the samples played when asked for. */
export type PlaybackEvent = {
  type: 'stats';
  playedSamples: number;
  droppedSamples: number;
  queuedSamples: number;
  /** Samples played since the last report (only when `emitSamples` was set). */
  samples?: Float32Array;
};

/** Options of the playback worklet (AudioWorkletNode `processorOptions`). */
export interface PlaybackOptions {
  /** Jitter-buffer depth before playing, in ms (default 80). */
  prebufferMs: number;
  /** Ring capacity in ms (default 2000). */
  capacityMs: number;
  /** Also post the played samples with each report (for `audio` events). */
  emitSamples: boolean;
}

/** Options of the capture worklet. */
export interface CaptureOptions {
  /** Samples per frame at 16 kHz (default 320 = 20 ms). */
  frameSamples: number;
}

export const CAPTURE_PROCESSOR = 'switchboard-capture';
export const PLAYBACK_PROCESSOR = 'switchboard-playback';
