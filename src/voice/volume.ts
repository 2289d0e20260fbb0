/**
 * The agent's `volume` (Retell's field, 0 to 2, default 1): a gain on the synthesized speech.
 * Samples the gain would push past 16-bit full scale are clipped there (hard clipping: above
 * about 1.5 on loud voices it is audible, as it is on Retell's louder settings).
 */

/** `pcm` with `gain` applied; the same array when the gain is 1. */
export function applyVolume(pcm: Int16Array, gain: number): Int16Array {
  if (gain === 1) return pcm;
  const out = new Int16Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) {
    const v = Math.round(pcm[i]! * gain);
    out[i] = v > 32_767 ? 32_767 : v < -32_768 ? -32_768 : v;
  }
  return out;
}
