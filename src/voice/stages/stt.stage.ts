import { MAX_WORDS_PER_UTTERANCE, type SttResult } from '../../providers/stt.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { SpeechFeed } from './speech-feed.ts';
import type { TurnEvent } from './turn.stage.ts';

/** The outcome of recognition, settled (never rejects) so it can wait in a queue safely. */
export type SettledTranscript = { ok: true; result: SttResult; atMs: number } | { ok: false; error: unknown; atMs: number };

export type SttEvent =
  | Exclude<TurnEvent, { type: 'speech_end' }>
  | { type: 'user_turn'; startMs: number; endMs: number; heardAtMs: number; voicedMs: number; transcript: Promise<SettledTranscript> };

export interface SttStageOptions {
  /** The recogniser's id, for the timeout's error message. */
  provider: string;
  /** Monotonic ms, the pipeline's clock. */
  now: () => number;
  /** Longest wait for a turn's transcript once the turn has ended, ms. */
  timeoutMs: number;
  /** Resolves `ms` later on the pipeline's clock (which lock-step tests move by hand). */
  after: (ms: number) => Promise<void>;
}

/**
 * Streams each utterance's audio (pre-roll included; of a pause, what SpeechFeed lets through) into the recogniser as it arrives and, at
 * the end of the turn, finalizes it. The transcript arrives later as a promise, so this stage
 * never stalls the audio path while the recogniser finishes. A recogniser that has not answered
 * `timeoutMs` after the end of the turn fails it (its finalize is aborted): no recogniser can
 * leave the call waiting forever.
 */
export async function* sttStage(
  events: AsyncIterable<TurnEvent>,
  stream: SpeechFeed,
  signal: AbortSignal,
  options: SttStageOptions,
): AsyncIterable<SttEvent> {
  const { now } = options;
  /** Where the utterance's audio (its pre-roll first) begins on the call's timeline, ms. */
  let audioStartMs = 0;
  for await (const ev of events) {
    if (signal.aborted) return;
    if (ev.type === 'speech_start') {
      audioStartMs = ev.preroll[0]?.offsetMs ?? ev.startMs;
      for (const f of ev.preroll) stream.write(f.pcm);
      yield ev;
    } else if (ev.type === 'speech') {
      stream.write(ev.frame.pcm, ev.silenceMs);
      yield ev;
    } else if (ev.type === 'speech_end') {
      const turn = new AbortController();
      const startMs = audioStartMs;
      const finalized = stream.finalize(AbortSignal.any([signal, turn.signal])).then(
        (result): SettledTranscript => ({ ok: true, result: onTimeline(result, startMs), atMs: now() }),
        (error: unknown): SettledTranscript => ({ ok: false, error, atMs: now() }),
      );
      const timedOut = options.after(options.timeoutMs).then((): SettledTranscript => {
        const error = new ProviderError('asr', options.provider, `no transcript within ${options.timeoutMs} ms of the end of the turn`, { retryable: true });
        turn.abort(error);
        return { ok: false, error, atMs: now() };
      });
      yield { type: 'user_turn', startMs: ev.startMs, endMs: ev.endMs, heardAtMs: ev.heardAtMs, voicedMs: ev.voicedMs, transcript: Promise.race([finalized, timedOut]) };
    } else {
      yield ev;
    }
  }
}

/** `result` with its word times (ms from the start of the utterance's audio) moved onto the call's timeline. */
function onTimeline(result: SttResult, audioStartMs: number): SttResult {
  if (!result.words) return result;
  const words = result.words.slice(0, MAX_WORDS_PER_UTTERANCE).map((w) => ({ word: w.word, startMs: audioStartMs + w.startMs, endMs: audioStartMs + w.endMs }));
  return { text: result.text, words };
}
