/**
 * The telephone keypad, for pressing keys on a call: the keys and their order (RFC 4733's event
 * codes 0-15), how long a key sounds and the silence after it, and the keys as in-band tones
 * (ITU-T Q.23's frequency pairs) for a carrier that takes only audio from us (Twilio's media
 * stream). SIP sends the same keys as RFC 4733 telephone events, with the same timing.
 */

/** The keys, in the order of their RFC 4733 event codes (0-9 are 0-9, `*` 10, `#` 11, A-D 12-15). */
export const KEYPAD_KEYS = '0123456789*#ABCD';
/** How long each key sounds, ms (Q.24 asks receivers to take 40 ms and more; IVRs want more than the minimum). */
export const KEY_TONE_MS = 100;
/** The silence after each key, ms (Q.24: a pause of 40 ms and more between keys). */
export const KEY_GAP_MS = 100;

/** A key's RFC 4733 event code, or -1 when `key` is not a key. Lower-case a-d are A-D. */
export function keyCode(key: string): number {
  return key.length === 1 ? KEYPAD_KEYS.indexOf(key.toUpperCase()) : -1;
}

/** The first character of `keys` that is not a key, or null when all are. */
export function notAKey(keys: string): string | null {
  return [...keys].find((key) => keyCode(key) < 0) ?? null;
}

/** Q.23's low group (the keypad's rows) and high group (its columns), Hz. */
const ROW_HZ = [697, 770, 852, 941] as const;
const COLUMN_HZ = [1209, 1336, 1477, 1633] as const;
/** The keypad's layout: a key's row and column pick its two frequencies. */
const LAYOUT = ['123A', '456B', '789C', '*0#D'];

/** A key's two frequencies, Hz: [low, high]. Throws when `key` is not a key. */
export function keyFrequencies(key: string): readonly [number, number] {
  const upper = key.toUpperCase();
  const row = LAYOUT.findIndex((keys) => keys.includes(upper));
  if (key.length !== 1 || row < 0) throw new Error(`"${key}" is not a key`);
  return [ROW_HZ[row]!, COLUMN_HZ[LAYOUT[row]!.indexOf(upper)]!];
}

/**
 * Each frequency's peak amplitude: -10 dBm0 per frequency (a DTMF generator's usual level; G.711's
 * full-scale sine is +3.17 dBm0, so -10 dBm0 is 13.17 dB below 32 767). The pair peaks at twice
 * this, well inside the range.
 */
const TONE_AMPLITUDE = Math.round(32_767 * 10 ** (-13.17 / 20));
/** The tone's first and last ms rise and fall (a hard edge splatters energy across the band). */
const RAMP_MS = 2;

/**
 * `keys` as in-band audio at `sampleRate` Hz: for each key, KEY_TONE_MS of its Q.23 pair, then
 * KEY_GAP_MS of silence. Throws when a character is not a key.
 */
export function keypadTones(keys: string, sampleRate: number): Int16Array {
  const toneSamples = Math.round((KEY_TONE_MS * sampleRate) / 1000);
  const keySamples = toneSamples + Math.round((KEY_GAP_MS * sampleRate) / 1000);
  const ramp = Math.round((RAMP_MS * sampleRate) / 1000);
  const out = new Int16Array(keySamples * keys.length);
  for (const [index, key] of [...keys].entries()) {
    const [low, high] = keyFrequencies(key);
    const at = index * keySamples;
    for (let i = 0; i < toneSamples; i += 1) {
      const edge = Math.min(1, (i + 1) / ramp, (toneSamples - i) / ramp);
      const t = i / sampleRate;
      out[at + i] = Math.round(edge * TONE_AMPLITUDE * (Math.sin(2 * Math.PI * low * t) + Math.sin(2 * Math.PI * high * t)));
    }
  }
  return out;
}
