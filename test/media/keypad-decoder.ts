// A DTMF receiver for the tests, independent of the code that makes the tones: Goertzel power at
// the eight Q.23 frequencies over 20 ms blocks; a block holds a key when one row and one column
// frequency stand well above the others and carry most of the block's energy; a key is heard when
// it holds for 40 ms (Q.24's shortest tone) and is counted again only after a block without it.

const ROWS = [697, 770, 852, 941];
const COLUMNS = [1209, 1336, 1477, 1633];
const LAYOUT = ['123A', '456B', '789C', '*0#D'];

function power(block: Int16Array, hz: number, rate: number): number {
  const coeff = 2 * Math.cos((2 * Math.PI * hz) / rate);
  let s1 = 0;
  let s2 = 0;
  for (const x of block) {
    const s0 = x + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

/** The key one block holds, or null. */
function blockKey(block: Int16Array, rate: number): string | null {
  const energy = block.reduce((sum, x) => sum + x * x, 0);
  if (energy / block.length < 200 * 200) return null; // quieter than -45 dBm0 or so: no key
  const best = (hzs: number[]) => {
    const p = hzs.map((hz) => power(block, hz, rate));
    const i = p.indexOf(Math.max(...p));
    const others = p.filter((_, j) => j !== i);
    return { i, p: p[i]!, dominant: others.every((o) => o * 10 < p[i]!) };
  };
  const row = best(ROWS);
  const column = best(COLUMNS);
  if (!row.dominant || !column.dominant) return null;
  // A pure tone of amplitude A over N samples gives Goertzel power (A N / 2)^2; energy A^2 N / 2.
  const tonal = (2 * (row.p + column.p)) / block.length / energy;
  return tonal > 0.7 ? LAYOUT[row.i]![column.i]! : null;
}

/** The keys heard in `pcm` (mono, `rate` Hz), in order. */
export function decodeKeypad(pcm: Int16Array, rate: number): string {
  const size = Math.round(rate / 50);
  let heard = '';
  let run: { key: string | null; blocks: number } = { key: null, blocks: 0 };
  for (let at = 0; at + size <= pcm.length; at += size) {
    const key = blockKey(pcm.subarray(at, at + size), rate);
    run = key === run.key ? { key, blocks: run.blocks + 1 } : { key, blocks: 1 };
    if (key !== null && run.blocks === 2) heard += key;
  }
  return heard;
}
