/**
 * Backchannels (Retell's `enable_backchannel`, `backchannel_frequency`, `backchannel_words`): while
 * the caller speaks at length, the agent says a short word ("okay", "uh-huh") quietly, in a pause
 * of the caller's speech, without taking the turn. Like pipecat's backchannel extension, the clips
 * are synthesised once per call in the agent's voice and play out of band: no reply, no
 * `agent_start_talking`, nothing the engine hears, nothing the caller's barge-in reacts to, and no
 * line of the transcript (Retell leaves them out too); they are in the recording's agent channel.
 *
 * When one is possible: an open user utterance with BACKCHANNEL_MIN_SPEECH_MS of speech in it since
 * its start (never at the start of a turn) or since the last opportunity, at the first
 * BACKCHANNEL_PAUSE_MS of a pause, at least BACKCHANNEL_MIN_GAP_MS after the last backchannel, with
 * the agent silent and nothing to answer. `frequency` is the share of those opportunities taken,
 * as Retell defines it (0 never, 1 always, default 0.8), spread evenly (error diffusion, so the
 * same speech gets the same backchannels). The pause may turn out to end the turn (nothing tells
 * in time: the end-of-turn rule reads most phrase ends as complete, and that is where people
 * backchannel); the reply then starts once the backchannel's last frame is out, so the word is
 * never heard cut (voice/playout.ts). The reply's audio is rarely ready before: the backchannel
 * starts at the pause's 100th ms and the turn ends no sooner than its 250th, before recognition and
 * synthesis; at most the rest of one clip (BACKCHANNEL_MAX_CLIP_MS) is added to that reply.
 */
import { FRAME_MS, Framer, SAMPLE_RATE_HZ, frameSamples } from './frames.ts';
import type { PacedPlayout } from './playout.ts';
import type { SpeechStyle, TtsProvider } from '../providers/tts.ts';
import { applyVolume } from './volume.ts';

/** Retell's default `backchannel_frequency`. */
export const DEFAULT_BACKCHANNEL_FREQUENCY = 0.8;
/** Words said without `backchannel_words`: Retell's defaults for voices other than ElevenLabs'. */
export const DEFAULT_BACKCHANNEL_WORDS: readonly string[] = ['okay', 'uh-huh', 'yeah'];
/** Speech in the utterance (since its start or the last opportunity) before a backchannel is possible, ms. */
export const BACKCHANNEL_MIN_SPEECH_MS = 3_000;
/** The pause in the caller's speech a backchannel goes in, ms (under the shortest end of turn, 250 ms by default). */
export const BACKCHANNEL_PAUSE_MS = 100;
/** Least time between two backchannels, ms of the call's audio. */
export const BACKCHANNEL_MIN_GAP_MS = 4_000;
/** Gain of a backchannel against the agent's speech (on top of its `volume`): said quietly. */
export const BACKCHANNEL_GAIN = 0.6;
/** Longest clip kept, ms: a "word" the synthesiser makes longer than this is not a backchannel. */
export const BACKCHANNEL_MAX_CLIP_MS = 1_500;

export interface BackchannelSettings {
  /** 0..1, the share of opportunities taken; default DEFAULT_BACKCHANNEL_FREQUENCY. */
  frequency?: number;
  /** The words said, in turn; default DEFAULT_BACKCHANNEL_WORDS. */
  words?: readonly string[];
}

/** One backchannel to play: its word and 20 ms frames. */
export interface BackchannelClip {
  readonly word: string;
  readonly frames: readonly Int16Array[];
}

/** What the pipeline knows at a frame of an open user utterance. */
export interface UtteranceFrame {
  /** Where the frame is on the call's timeline, ms. */
  offsetMs: number;
  /** Voiced audio since the utterance's onset, ms. */
  voicedMs: number;
  /** Silence since the last voiced frame, ms (0 on a voiced frame). */
  silenceMs: number;
}

/** Decides when to backchannel; pure, so the rule is tested on its own. */
export class BackchannelTimer {
  readonly #frequency: number;
  #sinceVoicedMs = 0;
  #lastAtMs = Number.NEGATIVE_INFINITY;
  /** Error-diffusion credit: an opportunity is taken once it reaches 1. */
  #credit = 0.5;

  constructor(frequency = DEFAULT_BACKCHANNEL_FREQUENCY) {
    this.#frequency = Math.min(1, Math.max(0, frequency));
  }

  /** A new user utterance begins: its speech is counted from zero. */
  utteranceStarted(): void {
    this.#sinceVoicedMs = 0;
  }

  /** At each frame of an open utterance, with `free`: the agent is silent with nothing to answer. True: backchannel now. */
  frame(f: UtteranceFrame, free: boolean): boolean {
    if (f.silenceMs < BACKCHANNEL_PAUSE_MS || f.silenceMs >= BACKCHANNEL_PAUSE_MS + FRAME_MS) return false;
    if (!free || f.voicedMs - this.#sinceVoicedMs < BACKCHANNEL_MIN_SPEECH_MS || f.offsetMs - this.#lastAtMs < BACKCHANNEL_MIN_GAP_MS) return false;
    // An opportunity: taken or not, the next one needs as much speech again.
    this.#sinceVoicedMs = f.voicedMs;
    this.#credit += this.#frequency;
    if (this.#credit < 1) return false;
    this.#credit -= 1;
    this.#lastAtMs = f.offsetMs;
    return true;
  }
}

/**
 * A call's backchannels: the words synthesised once (`prepare`, at the start of the call) in the
 * agent's voice, style and volume, and handed out in turn. A word the synthesiser fails on is left
 * out: a backchannel is never worth failing a call for.
 */
export class Backchannels {
  readonly timer: BackchannelTimer;
  readonly #words: readonly string[];
  readonly #clips: BackchannelClip[] = [];
  #next = 0;

  constructor(settings: BackchannelSettings) {
    this.timer = new BackchannelTimer(settings.frequency);
    const words = (settings.words ?? []).map((w) => w.trim()).filter((w) => w !== '');
    this.#words = words.length > 0 ? words : DEFAULT_BACKCHANNEL_WORDS;
  }

  /** Synthesises every word once in the agent's voice, style and volume; resolves when done (failures leave the word out). */
  async prepare(options: { tts: TtsProvider; voiceId?: string; volume?: number; speech?: SpeechStyle; sampleRateHz?: number }, signal: AbortSignal): Promise<void> {
    const gain = (options.volume ?? 1) * BACKCHANNEL_GAIN;
    const maxFrames = BACKCHANNEL_MAX_CLIP_MS / FRAME_MS;
    for (const word of this.#words) {
      if (signal.aborted) return;
      const framer = new Framer(frameSamples(options.sampleRateHz ?? SAMPLE_RATE_HZ));
      const frames: Int16Array[] = [];
      try {
        const chunks = options.tts.synthesize(word, { ...(options.voiceId ? { voiceId: options.voiceId } : {}), ...options.speech, signal });
        for await (const chunk of chunks) frames.push(...framer.push(chunk));
        frames.push(...framer.flush());
      } catch {
        continue;
      }
      const clip = trimSilence(frames).slice(0, maxFrames).map((f) => applyVolume(f, gain));
      if (clip.length > 0) this.#clips.push({ word, frames: clip });
    }
  }

  /** The next clip, in turn; undefined before `prepare` has made any. */
  next(): BackchannelClip | undefined {
    if (this.#clips.length === 0) return undefined;
    const clip = this.#clips[this.#next % this.#clips.length];
    this.#next++;
    return clip;
  }

  /** Plays the next clip out of band on `playout` (no reply: nothing the engine or the barge-in sees); `said` is told first. */
  play(playout: PacedPlayout, said: (word: string) => void): void {
    if (playout.speaking || playout.asidePlaying) return;
    const clip = this.next();
    if (!clip) return;
    said(clip.word);
    playout.aside(clip.frames);
  }
}

/** Frames quieter than this peak are the synthesiser's leading or trailing silence. */
const SILENT_PEAK = 200;

function trimSilence(frames: Int16Array[]): Int16Array[] {
  const loud = (f: Int16Array) => f.some((v) => v > SILENT_PEAK || v < -SILENT_PEAK);
  const first = frames.findIndex(loud);
  if (first < 0) return [];
  let last = frames.length - 1;
  while (last > first && !loud(frames[last]!)) last--;
  return frames.slice(first, last + 1);
}
