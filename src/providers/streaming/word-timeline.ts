import type { SpokenWord } from '../tts.ts';

/** Most words a timeline keeps: a reply is far shorter; beyond it a peer's alignment is ignored. */
const MAX_WORDS = 20_000;

/**
 * The words of one streamed generation with their times in its audio, built from the provider's
 * alignment: characters with start times and durations (ElevenLabs, offset by the audio already
 * received before the chunk they came with) or whole words with start and end (Cartesia).
 */
export class WordTimeline {
  readonly #words: SpokenWord[] = [];
  /** The word being spelled out by character alignment, not yet ended by whitespace. */
  #open: { text: string; startMs: number; endMs: number } | undefined;

  /** Characters with their start times and durations, ms, each shifted by `offsetMs`. Unusable input is ignored. */
  addChars(chars: unknown, startsMs: unknown, durationsMs: unknown, offsetMs: number): void {
    if (!Array.isArray(chars) || !Array.isArray(startsMs)) return;
    const durations = Array.isArray(durationsMs) ? durationsMs : [];
    for (let i = 0; i < chars.length && i < startsMs.length; i++) {
      const c = chars[i];
      const start = startsMs[i];
      if (typeof c !== 'string' || typeof start !== 'number' || !Number.isFinite(start)) continue;
      const d = durations[i];
      const end = offsetMs + start + (typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : 0);
      if (/^\s*$/.test(c)) {
        this.#close();
        continue;
      }
      if (this.#open) {
        this.#open.text += c;
        this.#open.endMs = Math.max(this.#open.endMs, end);
      } else this.#open = { text: c, startMs: offsetMs + start, endMs: end };
    }
  }

  /** Whole words with start and end times, seconds (Cartesia's `word_timestamps`). Unusable input is ignored. */
  addWords(words: unknown, startsS: unknown, endsS: unknown): void {
    if (!Array.isArray(words) || !Array.isArray(startsS) || !Array.isArray(endsS)) return;
    for (let i = 0; i < words.length && i < startsS.length && i < endsS.length; i++) {
      const w = words[i];
      const s = startsS[i];
      const e = endsS[i];
      if (typeof w !== 'string' || !w.trim() || typeof s !== 'number' || typeof e !== 'number' || !Number.isFinite(s) || !Number.isFinite(e)) continue;
      this.#push({ text: w.trim(), startMs: s * 1000, endMs: Math.max(s, e) * 1000 });
    }
  }

  /** The words so far, the one still being spelled out included. */
  words(): readonly SpokenWord[] {
    return this.#open ? [...this.#words, { ...this.#open }] : this.#words;
  }

  #close(): void {
    if (this.#open) this.#push(this.#open);
    this.#open = undefined;
  }

  #push(word: SpokenWord): void {
    if (this.#words.length < MAX_WORDS) this.#words.push(word);
  }
}

/** How many of `words` the caller heard once `playedMs` of the audio had played: a word counts once half of it has. */
export function wordsHeard(words: readonly SpokenWord[], playedMs: number): number {
  let n = 0;
  for (const w of words) {
    if ((w.startMs + w.endMs) / 2 > playedMs) break;
    n++;
  }
  return n;
}
