import type { SttResult, SttStream } from '../../providers/stt.ts';
import type { TurnEvent } from './turn.stage.ts';

/** The outcome of recognition, settled (never rejects) so it can wait in a queue safely. */
export type SettledTranscript = { ok: true; result: SttResult; atMs: number } | { ok: false; error: unknown; atMs: number };

export type SttEvent =
  | Exclude<TurnEvent, { type: 'speech_end' }>
  | { type: 'user_turn'; startMs: number; endMs: number; voicedMs: number; transcript: Promise<SettledTranscript> };

/**
 * Streams each utterance's audio (pre-roll included) into the recogniser as it arrives and, at
 * the end of the turn, finalizes it. The transcript arrives later as a promise, so this stage
 * never stalls the audio path while the recogniser finishes.
 */
export async function* sttStage(
  events: AsyncIterable<TurnEvent>,
  stream: SttStream,
  signal: AbortSignal,
  now: () => number,
): AsyncIterable<SttEvent> {
  for await (const ev of events) {
    if (signal.aborted) return;
    if (ev.type === 'speech_start') {
      for (const f of ev.preroll) stream.write(f.pcm);
      yield ev;
    } else if (ev.type === 'speech') {
      stream.write(ev.frame.pcm);
      yield ev;
    } else if (ev.type === 'speech_end') {
      const transcript = stream.finalize(signal).then(
        (result): SettledTranscript => ({ ok: true, result, atMs: now() }),
        (error: unknown): SettledTranscript => ({ ok: false, error, atMs: now() }),
      );
      yield { type: 'user_turn', startMs: ev.startMs, endMs: ev.endMs, voicedMs: ev.voicedMs, transcript };
    } else {
      yield ev;
    }
  }
}
