import type { Scheduler, TimerHandle } from '../../lib/scheduler.ts';
import type { EngineHangup, EngineOutput, ToolCallRecord } from '../engines/types.ts';

export type SpeechPiece = { type: 'sentence'; text: string } | EngineHangup | ToolCallRecord;

/** Soft and hard limits for cutting streamed text into pieces worth synthesizing. */
const FIRST_CLAUSE_CHARS = 24;
const CLAUSE_CHARS = 80;
const HARD_CHARS = 220;
/**
 * The first piece of a reply goes to synthesis once this many whole words have streamed in, if no
 * sentence or clause ended before (issue 26: Retell speaks text as it streams; a long first clause
 * waited for its comma).
 */
export const FIRST_PIECE_WORDS = 5;
const FIRST_WORDS = new RegExp(`^\\s*(?:\\S+\\s+){${FIRST_PIECE_WORDS}}`);

/**
 * Streamed text that waits this long with nothing more arriving goes to synthesis as it is, ms: a
 * stream that stalls mid-sentence, or ends without its content_complete, is still heard.
 */
export const IDLE_FLUSH_MS = 500;

/**
 * Groups the engine's streamed text into sentences (the first piece ends at a clause, or after
 * FIRST_PIECE_WORDS words, whichever comes first, to get audio out sooner), and calls
 * `onFirstText` when the first text arrives (LLM time to first token). With `time`, text left in
 * the buffer for IDLE_FLUSH_MS with nothing more arriving is flushed.
 */
export async function* sentenceStage(outputs: AsyncIterable<EngineOutput>, onFirstText?: () => void, time?: Scheduler): AsyncIterable<SpeechPiece> {
  let buf = '';
  let first = true;
  let emitted = 0;
  /** Text outputs in the buffer: one whole message (a static text) is never cut by words. */
  let parts = 0;
  const take = function* (final: boolean): Generator<SpeechPiece> {
    for (;;) {
      const cut = findCut(buf, emitted === 0, final, parts > 1);
      if (cut <= 0) return;
      const text = buf.slice(0, cut).trim();
      buf = buf.slice(cut);
      parts = buf ? 1 : 0;
      if (text) {
        emitted++;
        yield { type: 'sentence', text };
      }
    }
  };
  const it = outputs[Symbol.asyncIterator]();
  let next: Promise<IteratorResult<EngineOutput>> | undefined;
  let done = false;
  try {
    for (;;) {
      next ??= it.next();
      const result = time && buf.trim() ? await idleOr(next, time) : await next;
      if (result === 'idle') {
        yield* take(true);
        continue;
      }
      next = undefined;
      if (result.done) {
        done = true;
        break;
      }
      const o = result.value;
      if (o.type === 'text') {
        if (first && o.text) {
          first = false;
          onFirstText?.();
        }
        // Separate consecutive whole messages (static texts) that do not end in whitespace.
        parts++;
        buf += buf && !/\s$/.test(buf) && o.text && !/^\s/.test(o.text) && /[.!?]$/.test(buf) ? ` ${o.text}` : o.text;
        yield* take(false);
      } else {
        yield* take(true);
        yield o;
      }
    }
  } finally {
    // Stopped early (the reply was cut off): the engine's stream is told, without waiting for a read in flight.
    if (!done) {
      next?.catch(() => undefined);
      it.return?.()?.catch(() => undefined);
    }
  }
  yield* take(true);
}

/** The next output, or 'idle' once IDLE_FLUSH_MS pass without one. */
export async function idleOr(next: Promise<IteratorResult<EngineOutput>>, time: Scheduler): Promise<IteratorResult<EngineOutput> | 'idle'> {
  let timer: TimerHandle | undefined;
  const idle = new Promise<'idle'>((resolve) => (timer = time.setTimeout(() => resolve('idle'), IDLE_FLUSH_MS)));
  try {
    return await Promise.race([next, idle]);
  } finally {
    if (timer) time.clear(timer);
  }
}

function findCut(buf: string, firstPiece: boolean, final: boolean, streamed: boolean): number {
  const sentence = /[.!?]+["')\]]?(\s+)/g;
  const m = sentence.exec(buf);
  if (m) return m.index + m[0].length;
  if (final) return buf.trim() ? buf.length : buf.length > 0 ? buf.length : 0;
  const clauseLimit = firstPiece ? FIRST_CLAUSE_CHARS : CLAUSE_CHARS;
  if (buf.length >= clauseLimit) {
    const clause = /[,;:]\s+/g;
    let last = -1;
    for (let c = clause.exec(buf); c; c = clause.exec(buf)) last = c.index + c[0].length;
    if (last > 0) return last;
  }
  const words = firstPiece && streamed ? FIRST_WORDS.exec(buf) : null;
  if (words) return words[0].length;
  if (buf.length >= HARD_CHARS) {
    const sp = buf.lastIndexOf(' ', HARD_CHARS);
    return sp > 0 ? sp + 1 : HARD_CHARS;
  }
  return 0;
}
