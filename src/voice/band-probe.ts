/**
 * The call's audio band, from the first BAND_SAMPLE_MS of the user's voiced audio: whether it
 * carries energy above the telephone band (src/providers/audio/band.ts, which measures 16 kHz
 * audio). A call at 8 kHz carries nothing above 4 kHz by its rate: it is narrow, unmeasured.
 */
import { BandMeter } from '../providers/audio/band.ts';
import { FRAME_MS, SAMPLE_RATE_HZ } from './frames.ts';

/** Voiced user audio measured before the band is reported, ms. */
export const BAND_SAMPLE_MS = 2_000;

export class BandProbe {
  #meter: BandMeter | undefined = new BandMeter();
  #ms = 0;

  /** Feeds one voiced frame at `rateHz`; returns the band once BAND_SAMPLE_MS are measured (then it costs nothing). */
  push(pcm: Int16Array, rateHz: number = SAMPLE_RATE_HZ): { band: 'narrow' | 'wide'; highFraction: number } | undefined {
    const meter = this.#meter;
    if (!meter) return undefined;
    if (rateHz === SAMPLE_RATE_HZ) meter.push(pcm);
    this.#ms += FRAME_MS;
    if (this.#ms < BAND_SAMPLE_MS) return undefined;
    this.#meter = undefined;
    if (rateHz !== SAMPLE_RATE_HZ) return { band: 'narrow', highFraction: 0 };
    return { band: meter.narrowband() ? 'narrow' : 'wide', highFraction: meter.highFraction() };
  }
}
