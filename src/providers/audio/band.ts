/**
 * Audio band detection: whether 16 kHz speech carries energy above 4 kHz (measured above 4.5 kHz). Audio that went
 * through an 8 kHz channel (phone lines, Bluetooth headsets in hands-free mode, Flite's 8 kHz
 * voice) has none, and the embedded recogniser's wideband model hears it badly
 * (BENCHMARKS.md, "Recognition").
 */

/**
 * Fraction of energy above HIGH_BAND_HZ below which audio counts as telephone-band. Measured on
 * the benchmark corpus: wideband Flite speech 1.9e-4 to 1.2e-2, through an 8 kHz channel (or
 * the 8 kHz kal voice) 2.6e-7 to 9.6e-6.
 */
export const NARROWBAND_MAX_HIGH_FRACTION = 5e-5;

/** Where "high" energy starts, Hz: above the 4 kHz edge, past an 8 kHz channel's roll-off. */
export const HIGH_BAND_HZ = 4_500;

/**
 * Accumulates, over the frames it is given (speech, ideally), the energy above HIGH_BAND_HZ and
 * the total, with an 8th-order Butterworth high-pass (four biquads) for 16 kHz audio.
 */
export class BandMeter {
  readonly #sections = [0.5098, 0.6013, 0.9, 2.5629].map((q) => highPass(HIGH_BAND_HZ, q));
  #high = 0;
  #total = 0;

  /** Adds 16 kHz samples. */
  push(pcm: Int16Array): void {
    for (const x of pcm) {
      let y = x;
      for (const s of this.#sections) y = s(y);
      this.#high += y * y;
      this.#total += x * x;
    }
  }

  /** Fraction (0..1) of the energy above 4 kHz; 0 before any non-silent audio. */
  highFraction(): number {
    return this.#total === 0 ? 0 : this.#high / this.#total;
  }

  /** True when audio has been heard and almost none of its energy is above 4 kHz. */
  narrowband(): boolean {
    return this.#total > 0 && this.highFraction() < NARROWBAND_MAX_HIGH_FRACTION;
  }
}

/** A biquad high-pass at `fc` Hz for 16 kHz audio (RBJ cookbook), as a stateful sample filter. */
function highPass(fc: number, q: number): (x: number) => number {
  const w0 = (2 * Math.PI * fc) / 16000;
  const cos = Math.cos(w0);
  const alpha = Math.sin(w0) / (2 * q);
  const a0 = 1 + alpha;
  const b0 = (1 + cos) / 2 / a0;
  const b1 = -(1 + cos) / a0;
  const b2 = (1 + cos) / 2 / a0;
  const a1 = (-2 * cos) / a0;
  const a2 = (1 - alpha) / a0;
  let x1 = 0;
  let x2 = 0;
  let y1 = 0;
  let y2 = 0;
  return (x) => {
    const y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
    x2 = x1;
    x1 = x;
    y2 = y1;
    y1 = y;
    return y;
  };
}
