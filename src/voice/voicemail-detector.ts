/**
 * Answering-machine detection for outbound phone calls (issue 24; Retell's
 * `enable_voicemail_detection`): a pure state machine, the callee's audio (mono PCM at the call's
 * rate, 16 or 8 kHz, any chunk size) and what the recogniser heard of it in, one decision out. No I/O, no timers: its
 * clock is the audio it was given, so the same audio always gives the same decision.
 *
 * What decides, in the order a machine usually gives itself away (Twilio's AMD and the hosted
 * agents decide on the same cues):
 * - a beep: one steady tone between 400 and 2000 Hz held BEEP_MIN_MS (Goertzel power over a
 *   40 ms window at 8 kHz, the phone band's own rate or 16 kHz audio taken in pairs, at 50 Hz steps then 25 Hz around the strongest; a tone puts nearly all
 *   of a window's energy in one bin, speech spreads it over its harmonics and moves);
 * - a greeting's words: "leave a message", "not available", "after the tone", "voicemail", ...
 *   in the transcript (GREETING_PHRASES);
 * - a long uninterrupted greeting: talk with no pause of HUMAN_PAUSE_MS for LONG_GREETING_MS
 *   (people answer "Hello?" and wait; machines talk on).
 * A short first utterance followed by a pause (`human_pause`), a callee who says nothing for
 * SILENT_CALLEE_MS (`silence`: people who wait for the caller to speak), and the end of the
 * window (`timeout`, Retell: detection stops and the call goes on) decide a human.
 *
 * Once it has decided a machine, it goes on listening for where a message may start
 * (`message_window`): the end of the beep, or, with no beep, MESSAGE_SILENCE_MS of quiet after
 * the greeting, or at the latest MESSAGE_WAIT_MS after the decision.
 */

/** The detector's frame, ms (320 samples at 16 kHz, 160 at 8 kHz). */
export const VM_FRAME_MS = 20;
/**
 * The tone search's window: two frames at 8 kHz (16 kHz audio taken in averaged pairs: a beep is
 * in the phone band), 320 samples, so that its bins are 25 Hz apart.
 */
const TONE_RATE = 8_000;
const TONE_WINDOW = (2 * TONE_RATE * VM_FRAME_MS) / 1000;

/** A steady tone at least this long is a beep, ms (answering machines: 200 ms to 1 s). */
export const BEEP_MIN_MS = 160;
/** Talk with no pause of HUMAN_PAUSE_MS for this long is a machine's greeting, ms (Twilio's speech threshold is 2400). */
export const LONG_GREETING_MS = 3_000;
/** A pause this long after a short first utterance is a person waiting for an answer, ms. */
export const HUMAN_PAUSE_MS = 800;
/** A first utterance up to this long, then a pause, is a person ("Hello?", "Hi, this is Sam."), ms. */
export const SHORT_GREETING_MS = 2_000;
/** No sound at all from the callee this long after the answer: a person waiting, ms. */
export const SILENT_CALLEE_MS = 5_000;
/** After a machine greeting with no beep, this much quiet opens the message window, ms. */
export const MESSAGE_SILENCE_MS = 1_500;
/** The message window opens at the latest this long after the machine was decided, ms. */
export const MESSAGE_WAIT_MS = 15_000;
/** Bounds of the detection window (Retell's `voicemail_detection_timeout_ms`: 5 s to 180 s, default 30 s). */
export const VOICEMAIL_TIMEOUT_BOUNDS_MS = { min: 5_000, max: 180_000, default: 30_000 } as const;
/** The transcript text kept for phrase matching, characters (the latest part). */
const HEARD_MAX_CHARS = 2_000;

/** Words only an answering machine's greeting says (lower-case, matched on word boundaries). */
export const GREETING_PHRASES: readonly RegExp[] = [
  /\bleave (?:me |us )?(?:a |your )?(?:brief |short )?(?:message|name|number)\b/,
  /\b(?:not|isn'?t|is not|am not|are not|aren'?t) available\b/,
  /\bunavailable\b/,
  /\b(?:after|at) the (?:tone|beep)\b/,
  /\bvoice ?mail\b/,
  /\bmailbox\b/,
  /\brecord your message\b/,
  /\bcan'?t (?:come to|take|get to|answer) (?:the |your )?(?:phone|call)\b/,
  /\b(?:get|call) (?:back to you|you back)\b/,
];

export type VoicemailCue = 'beep' | 'greeting_phrase' | 'long_greeting';
export type HumanCue = 'human_pause' | 'silence' | 'timeout';

/** What the detector decided; each kind is given once, `message_window` only after `machine`. */
export type VoicemailDecision =
  | { kind: 'machine'; cue: VoicemailCue; atMs: number }
  | { kind: 'human'; cue: HumanCue; atMs: number }
  | { kind: 'message_window'; cue: 'beep_end' | 'greeting_end' | 'waited'; atMs: number };

export interface VoicemailDetectorOptions {
  /** The detection window, ms (bounded by VOICEMAIL_TIMEOUT_BOUNDS_MS). */
  timeoutMs: number;
  /** Frame RMS above which the callee makes sound; default 400 (about -38 dBFS). */
  soundRms?: number;
  /** The rate of the audio pushed, Hz: 8000 (a telephone-band call, heard as it is) or 16000, the default. */
  sampleRateHz?: 8000 | 16000;
}

/** The Goertzel coefficient 2cos(2πf/rate) of `hz` in the tone window. */
const coeffOf = (hz: number) => 2 * Math.cos((2 * Math.PI * hz) / TONE_RATE);
/** The coarse search: 400 to 2000 Hz, 50 Hz apart; the best bin is then refined 25 Hz either side. */
const COARSE_BINS = Array.from({ length: (2000 - 400) / 50 + 1 }, (_, i) => 400 + i * 50);
/** Share of a window's energy in its strongest bin above which it is a tone (a pure tone gives about 0.9-1). */
const TONALITY = 0.6;
/** A beep's frequency may drift this much frame to frame, Hz. */
const TONE_DRIFT_HZ = 30;

export class VoicemailDetector {
  readonly #timeoutMs: number;
  readonly #soundRms: number;
  /** Samples per frame at the audio's rate. */
  readonly #frameSamples: number;
  /** Samples of the audio per sample of the tone window: 2 at 16 kHz, 1 at 8 kHz. */
  readonly #step: number;
  /** Samples not yet a whole frame. */
  #pending = new Int16Array(0);
  /** The previous frame, for the tone window. */
  #previous: Int16Array;
  #frames = 0;
  #state: 'listening' | 'machine' | 'human' | 'done' = 'listening';
  /** The current stretch of talk, from its first voiced frame (pauses shorter than HUMAN_PAUSE_MS join it), and its voiced audio, ms. */
  #stretchMs = 0;
  #voicedInStretchMs = 0;
  #quietMs = 0;
  #heardSound = false;
  /** The tone being followed: its frequency and how long it has held, ms. */
  #toneHz = 0;
  #toneMs = 0;
  #beepHeard = false;
  #machineAtMs = 0;
  #heard = '';
  readonly #out: VoicemailDecision[] = [];
  /** The tone search's window (reused). */
  readonly #toneWindow = new Float64Array(TONE_WINDOW);

  constructor(options: VoicemailDetectorOptions) {
    const { min, max } = VOICEMAIL_TIMEOUT_BOUNDS_MS;
    this.#timeoutMs = Math.min(max, Math.max(min, options.timeoutMs));
    this.#soundRms = options.soundRms ?? 400;
    const rate = options.sampleRateHz ?? 16_000;
    this.#frameSamples = (rate * VM_FRAME_MS) / 1000;
    this.#step = rate / TONE_RATE;
    this.#previous = new Int16Array(this.#frameSamples);
  }

  /** The audio heard so far, ms. */
  get elapsedMs(): number {
    return this.#frames * VM_FRAME_MS;
  }

  /** Whether it still wants audio or words: false once a human is decided, or the message window has opened. */
  get listening(): boolean {
    return this.#state === 'listening' || this.#state === 'machine';
  }

  /** The callee's audio (mono PCM at the detector's rate, any length); returns the decisions it led to, in order. */
  push(pcm: Int16Array): VoicemailDecision[] {
    if (!this.listening) return [];
    let samples = pcm;
    if (this.#pending.length > 0) {
      samples = new Int16Array(this.#pending.length + pcm.length);
      samples.set(this.#pending);
      samples.set(pcm, this.#pending.length);
    }
    let at = 0;
    const n = this.#frameSamples;
    for (; at + n <= samples.length && this.listening; at += n) this.#frame(samples.subarray(at, at + n));
    this.#pending = this.listening ? samples.slice(at) : new Int16Array(0);
    return this.#out.splice(0);
  }

  /** What the recogniser heard of the callee (interim or final text); returns the decisions it led to. */
  hear(text: string): VoicemailDecision[] {
    if (this.#state !== 'listening') return [];
    this.#heard = `${this.#heard} ${text.toLowerCase()}`.slice(-HEARD_MAX_CHARS);
    if (GREETING_PHRASES.some((p) => p.test(this.#heard))) this.#machine('greeting_phrase');
    return this.#out.splice(0);
  }

  #frame(frame: Int16Array): void {
    this.#frames += 1;
    let energy = 0;
    for (const x of frame) energy += x * x;
    const rms = Math.sqrt(energy / this.#frameSamples);
    const loud = rms >= this.#soundRms;
    const tone = loud ? this.#toneOf(frame) : null;
    this.#previous = frame.slice();
    const wasBeep = this.#toneMs >= BEEP_MIN_MS;
    if (tone !== null && this.#toneMs > 0 && Math.abs(tone - this.#toneHz) <= TONE_DRIFT_HZ) this.#toneMs += VM_FRAME_MS;
    else if (tone !== null) this.#toneMs = VM_FRAME_MS;
    else this.#toneMs = 0;
    if (tone !== null) this.#toneHz = tone;
    if (this.#toneMs >= BEEP_MIN_MS) this.#beepHeard = true;

    if (this.#state === 'listening') this.#listen(loud && tone === null, this.#toneMs >= BEEP_MIN_MS);
    if (this.#state === 'machine') this.#waitForWindow(loud, wasBeep && this.#toneMs === 0);
  }

  /** Before a decision: the beep, the greeting's length and its pauses. */
  #listen(voiced: boolean, beep: boolean): void {
    if (beep) return this.#machine('beep');
    if (voiced) {
      this.#heardSound = true;
      this.#quietMs = 0;
      this.#stretchMs += VM_FRAME_MS;
      this.#voicedInStretchMs += VM_FRAME_MS;
      // The stretch's span, from its first voiced frame to now (its short pauses included).
      if (this.#stretchMs >= LONG_GREETING_MS) return this.#machine('long_greeting');
    } else {
      this.#quietMs += VM_FRAME_MS;
      if (this.#stretchMs > 0) this.#stretchMs += VM_FRAME_MS;
      // The stretch's span, from its first voiced frame to its last: a person's first words are short.
      const spanMs = this.#stretchMs - this.#quietMs;
      if (this.#heardSound && this.#quietMs >= HUMAN_PAUSE_MS && this.#voicedInStretchMs > 0 && spanMs <= SHORT_GREETING_MS) return this.#human('human_pause');
      // A long pause ends the stretch: what follows is judged afresh.
      if (this.#quietMs >= HUMAN_PAUSE_MS) this.#stretchMs = this.#voicedInStretchMs = 0;
      if (!this.#heardSound && this.elapsedMs >= SILENT_CALLEE_MS) return this.#human('silence');
    }
    if (this.elapsedMs >= this.#timeoutMs) this.#human('timeout');
  }

  /** After a machine: where the message may start. */
  #waitForWindow(loud: boolean, beepEnded: boolean): void {
    if (beepEnded) return this.#window('beep_end');
    this.#quietMs = loud ? 0 : this.#quietMs + VM_FRAME_MS;
    // A machine that beeps does so within a second of its greeting's end: the quiet must be longer.
    if (!this.#beepHeard && this.#quietMs >= MESSAGE_SILENCE_MS) return this.#window('greeting_end');
    if (this.elapsedMs - this.#machineAtMs >= MESSAGE_WAIT_MS) this.#window('waited');
  }

  #machine(cue: VoicemailCue): void {
    this.#state = 'machine';
    this.#machineAtMs = this.elapsedMs;
    this.#quietMs = 0;
    this.#out.push({ kind: 'machine', cue, atMs: this.elapsedMs });
    // A beep that was the cue may already be over by the next frame: the window is judged from here.
  }

  #human(cue: HumanCue): void {
    this.#state = 'human';
    this.#out.push({ kind: 'human', cue, atMs: this.elapsedMs });
  }

  #window(cue: 'beep_end' | 'greeting_end' | 'waited'): void {
    this.#state = 'done';
    this.#out.push({ kind: 'message_window', cue, atMs: this.elapsedMs });
  }

  /**
   * The frequency of the tone in the last 40 ms (this frame and the previous), or null when its
   * energy is not in one bin (Goertzel: the power at each bin, against the window's energy).
   */
  #toneOf(frame: Int16Array): number | null {
    const window = this.#toneWindow;
    const half = TONE_WINDOW / 2;
    if (this.#step === 1) {
      // Telephone-band audio is at the window's rate already: heard as it is.
      window.set(this.#previous);
      window.set(frame, half);
    } else {
      for (let i = 0; i < half; i++) {
        window[i] = (this.#previous[2 * i]! + this.#previous[2 * i + 1]!) / 2;
        window[half + i] = (frame[2 * i]! + frame[2 * i + 1]!) / 2;
      }
    }
    let energy = 0;
    for (const x of window) energy += x * x;
    if (energy === 0) return null;
    let best = { hz: 0, power: 0 };
    for (const hz of COARSE_BINS) best = strongest(best, hz, goertzel(window, hz));
    const coarse = best.hz;
    for (const hz of [coarse - 25, coarse + 25]) if (hz >= 400 && hz <= 2000) best = strongest(best, hz, goertzel(window, hz));
    // A sinusoid of amplitude A over N samples: power (A·N/2)², energy A²·N/2, so power/(energy·N/2) is 1.
    return best.power / ((energy * TONE_WINDOW) / 2) >= TONALITY ? best.hz : null;
  }
}

/** The power at `hz` in `window` (Goertzel). */
function goertzel(window: Float64Array, hz: number): number {
  const coeff = coeffOf(hz);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < window.length; i++) {
    const s0 = window[i]! + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

function strongest(best: { hz: number; power: number }, hz: number, power: number): { hz: number; power: number } {
  return power > best.power ? { hz, power } : best;
}
