import type { Pronunciation, TtsProvider } from '../../providers/tts.ts';
import { ProviderError, isAbortError } from '../../providers/errors.ts';
import type { EngineHangup, ToolCallRecord } from '../engines/types.ts';
import type { SpeechPiece } from './engine.stage.ts';
import { normaliseForSpeech } from '../speech-normaliser.ts';
import { applyVolume } from '../volume.ts';

export type TtsEvent =
  | { type: 'sentence_start'; index: number; text: string }
  /** The text of sentence `index` so far, as a streamed reply grows (text-stream.stage.ts). */
  | { type: 'sentence_text'; index: number; text: string }
  | { type: 'audio'; index: number; pcm: Int16Array }
  | EngineHangup
  | ToolCallRecord;

/**
 * Synthesizes sentence by sentence, pulled by the consumer: how far synthesis runs ahead of
 * playback is bounded by the consumer's (blocking) output queue. `onSynthesisStart` fires when
 * the first sentence goes to the engine, `onFirstAudio` when its first audio comes back.
 * `normalise` speaks numbers, dates and times as words (the `sentence_start` text stays as
 * written); `volume` is a gain on the audio; `speed` and `pronunciations` go to the synthesiser
 * (the agent's Retell fields, issue 26).
 */
export async function* ttsStage(
  pieces: AsyncIterable<SpeechPiece>,
  tts: TtsProvider,
  options: { voiceId?: string; volume?: number; normalise?: boolean; speed?: number; pronunciations?: readonly Pronunciation[]; signal: AbortSignal; onSynthesisStart?: () => void; onFirstAudio?: () => void },
): AsyncIterable<TtsEvent> {
  let index = 0;
  let firstAudio = true;
  for await (const p of pieces) {
    if (options.signal.aborted) return;
    if (p.type !== 'sentence') {
      yield p;
      continue;
    }
    const i = index++;
    yield { type: 'sentence_start', index: i, text: p.text };
    if (i === 0) options.onSynthesisStart?.();
    const audio = tts.synthesize(options.normalise ? normaliseForSpeech(p.text) : p.text, {
      ...(options.voiceId ? { voiceId: options.voiceId } : {}),
      ...(options.speed !== undefined && options.speed !== 1 ? { speed: options.speed } : {}),
      ...(options.pronunciations?.length ? { pronunciations: options.pronunciations } : {}),
      signal: options.signal,
    });
    const it = audio[Symbol.asyncIterator]();
    let exhausted = false;
    try {
      for (;;) {
        let next: IteratorResult<Int16Array>;
        try {
          next = await it.next();
        } catch (e) {
          exhausted = true;
          // A synthesis failure is the synthesiser's, whatever it threw (the call ends `error_tts`).
          throw e instanceof ProviderError || isAbortError(e) || options.signal.aborted ? e : new ProviderError('tts', tts.id, 'synthesis failed', { cause: e });
        }
        if (next.done) {
          exhausted = true;
          break;
        }
        if (firstAudio) {
          firstAudio = false;
          options.onFirstAudio?.();
        }
        yield { type: 'audio', index: i, pcm: options.volume === undefined ? next.value : applyVolume(next.value, options.volume) };
      }
    } finally {
      // Stopped early (barge-in, the call ended): the synthesiser's stream is released, as for-await would.
      if (!exhausted) await it.return?.();
    }
  }
}
