import type { Scheduler } from '../../lib/scheduler.ts';
import type { TtsTextStream } from '../../providers/tts.ts';
import { ProviderError, isAbortError } from '../../providers/errors.ts';
import type { EngineOutput } from '../engines/types.ts';
import { FIRST_PIECE_WORDS, idleOr } from './engine.stage.ts';
import type { TtsEvent } from './tts.stage.ts';
import { applyVolume } from '../volume.ts';

/** A first clause or sentence ends here: what was written so far is spoken at once. */
const FIRST_PIECE_END = /[.!?,;:]["')\]]?\s/;

export interface TextStreamStageOptions {
  signal: AbortSignal;
  /** The pipeline's clock: text left waiting IDLE_FLUSH_MS with nothing more arriving is flushed. */
  time?: Scheduler;
  /** The provider's id, for the failures it did not wrap itself. */
  provider: string;
  volume?: number;
  onFirstText?: () => void;
  onSynthesisStart?: () => void;
  onFirstAudio?: () => void;
}

/**
 * A reply spoken as it streams, on a synthesiser that takes text incrementally (issue 26): the
 * engine's text goes to `stream` word by word as it arrives (a word once the whitespace after it
 * has), the first piece (FIRST_PIECE_WORDS words, or a clause or sentence if shorter) flushed so
 * the first audio does not wait for the provider's buffering, the rest flushed when it waits
 * IDLE_FLUSH_MS with nothing more arriving, before a function call or a hang-up, and at the end
 * of the reply (content_complete). The events are those of ttsStage, for one growing sentence
 * (index 0): `sentence_text` as the text grows, `audio` as it comes back. Stopping early
 * (barge-in) releases the audio, which cancels the provider's generation.
 */
export async function* textStreamStage(outputs: AsyncIterable<EngineOutput>, stream: TtsTextStream, o: TextStreamStageOptions): AsyncIterable<TtsEvent> {
  const pending: TtsEvent[] = [];
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  /** Text written to the stream, and text waiting for the end of its word. */
  let said = '';
  let buf = '';
  let unflushed = false;
  let firstFlushed = false;
  let pumpDone = false;
  let pumpError: Error | undefined;

  const write = (final: boolean): void => {
    const cut = final ? buf.length : Math.max(buf.search(/\s\S*$/) + 1, /\s$/.test(buf) ? buf.length : 0);
    if (cut <= 0 || !buf.slice(0, cut).trim()) return;
    const piece = buf.slice(0, cut);
    buf = buf.slice(cut);
    if (!said.trim()) o.onSynthesisStart?.();
    stream.write(piece);
    said += piece;
    unflushed = true;
    pending.push({ type: 'sentence_text', index: 0, text: said.trim() });
    if (!firstFlushed && (said.trim().split(/\s+/).length >= FIRST_PIECE_WORDS || FIRST_PIECE_END.test(said))) {
      // The whole words so far; a word still arriving waits for the next flush.
      firstFlushed = true;
      unflushed = false;
      stream.flush();
    }
    notify();
  };
  const flush = (): void => {
    write(true);
    if (!unflushed) return;
    unflushed = false;
    // Whatever came first has gone: the first piece's own flush is not needed any more.
    firstFlushed = true;
    stream.flush();
  };

  const pump = async (): Promise<void> => {
    const it = outputs[Symbol.asyncIterator]();
    let next: Promise<IteratorResult<EngineOutput>> | undefined;
    let done = false;
    let first = true;
    try {
      for (;;) {
        next ??= it.next();
        const result = o.time && (buf.trim() || unflushed) ? await idleOr(next, o.time) : await next;
        if (result === 'idle') {
          flush();
          continue;
        }
        next = undefined;
        if (result.done) {
          done = true;
          break;
        }
        if (o.signal.aborted) return;
        const out = result.value;
        if (out.type === 'text') {
          if (first && out.text) {
            first = false;
            o.onFirstText?.();
          }
          // Consecutive whole messages (static texts) that do not end in whitespace are kept apart.
          const before = said + buf;
          buf += before && /[.!?]$/.test(before) && out.text && !/^\s/.test(out.text) ? ` ${out.text}` : out.text;
          write(false);
        } else {
          flush();
          pending.push(out);
          notify();
        }
      }
      write(true);
      stream.end();
    } catch (e) {
      pumpError = e instanceof Error ? e : new Error(String(e));
    } finally {
      // Stopped early (the reply was cut off): the engine's stream is told, without waiting for a read in flight.
      if (!done) {
        next?.catch(() => undefined);
        it.return?.()?.catch(() => undefined);
      }
      pumpDone = true;
      notify();
    }
  };
  void pump();

  const audio = stream.audio()[Symbol.asyncIterator]();
  let audioNext: Promise<IteratorResult<Int16Array>> | undefined;
  let audioDone = false;
  let firstAudio = true;
  try {
    for (;;) {
      while (pending.length > 0) yield pending.shift()!;
      if (pumpError !== undefined) throw pumpError;
      if (o.signal.aborted) return;
      if (audioDone) {
        if (pumpDone) return;
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      audioNext ??= audio.next();
      const woken = new Promise<'woken'>((r) => (wake = () => r('woken')));
      let r: IteratorResult<Int16Array> | 'woken';
      try {
        r = await Promise.race([audioNext, woken]);
      } catch (e) {
        audioDone = true;
        // A synthesis failure is the synthesiser's, whatever it threw (the call ends `error_tts`).
        throw e instanceof ProviderError || isAbortError(e) || o.signal.aborted ? e : new ProviderError('tts', o.provider, 'synthesis failed', { cause: e });
      }
      if (r === 'woken') continue;
      wake = undefined;
      audioNext = undefined;
      if (r.done) {
        audioDone = true;
        continue;
      }
      if (firstAudio) {
        firstAudio = false;
        o.onFirstAudio?.();
      }
      yield { type: 'audio', index: 0, pcm: o.volume === undefined ? r.value : applyVolume(r.value, o.volume) };
    }
  } finally {
    // Stopped early (barge-in, a failure): the audio is released, which cancels the generation.
    if (!audioDone) {
      audioNext?.catch(() => undefined);
      audio.return?.()?.catch(() => undefined);
    }
  }
}
