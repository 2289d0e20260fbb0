/**
 * The telephone band through a call's recogniser path (`npm run bench -- telephone-band`; issue 24
 * item 6): the real-speech set's 8 kHz groups (tel8k/ and the *-8k folders, bench/real-speech.ts),
 * each item fed in 20 ms frames of 160 samples, as a G.711 or Twilio call hands them over, to a
 * PocketSphinx stream told the node's expectation (directed recognition, as a flow's keyword or
 * digits node does), two ways:
 *   - wideband: the stream opened as a call opens it (src/voice/call-rate.ts openRecogniser at
 *     8 kHz): PocketSphinx states `telephoneRate` 16000, so it gets its own copy upsampled to
 *     16 kHz (Speex, streaming), as the endpoints gave every recogniser before issue 24 item 6;
 *   - narrowband: the stream opened at 8 kHz (PocketSphinx's narrowband decoder, `-samprate 8000`)
 *     and given the frames as they came: what a call would hand it with `telephoneRate` 8000.
 * Both ways in the same run, on the same items in the same order, one stream per group and way.
 * Scores as in real-speech.ts: the keyword edge taken (commands, and for sentences the share that
 * wrongly took one), the digit string read (digits). Also the decoder's wall time per second of
 * audio (load-sensitive; compare the two columns of one run only).
 */
import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { DecoderPool } from '../src/providers/pocketsphinx/decoder-pool.ts';
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttExpectation } from '../src/providers/stt.ts';
import { openRecogniser } from '../src/voice/call-rate.ts';
import { fmt } from './lib.ts';
import { COMMANDS_NODE, DIGITS_NODE, type Item, commandEdge, digitsOf, padded, readWav, realSpeechDir } from './real-speech.ts';

type Way = 'wideband' | 'narrowband';

/** The texts heard of `items` through one call-opened stream, and the wall time the decoding took per second of audio. */
async function heard(items: readonly Item[], way: Way, expectation: SttExpectation): Promise<{ texts: string[]; wallPerS: number }> {
  const pool = new DecoderPool({ maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool });
  const s = way === 'narrowband' ? await stt.openStream({ sampleRateHz: 8000 }) : await openRecogniser(stt, 8000, {});
  const texts: string[] = [];
  let audioS = 0;
  let wallMs = 0;
  try {
    s.write(new Int16Array(4000));
    await s.finalize();
    s.expect?.(expectation);
    for (const it of items) {
      const raw = padded(readWav(join(realSpeechDir(), it.file)), 8000);
      const started = performance.now();
      for (let o = 0; o < raw.length; o += 160) s.write(raw.subarray(o, o + 160));
      texts.push((await s.finalize()).text);
      wallMs += performance.now() - started;
      audioS += raw.length / 8000;
    }
    return { texts, wallPerS: wallMs / 1000 / audioS };
  } finally {
    await s.close();
    await pool.close();
  }
}

const pct = (ok: number, n: number): string => (n === 0 ? '-' : `${fmt((100 * ok) / n)} % (${ok}/${n})`);

/** The before/after table (markdown), or a line saying why it was not run. */
export async function runTelephoneBandBench(options: { log?: (line: string) => void; perGroup?: number } = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return `Telephone band: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const groups: Array<{ name: string; kind: Item['kind'] }> = [
    { name: 'commands, telephone band', kind: 'command' },
    { name: 'single digits, 8 kHz', kind: 'digit' },
    { name: 'digit strings, 8 kHz', kind: 'digits' },
    { name: 'sentences, telephone band (a keyword edge taken: wrong)', kind: 'sentence' },
  ];
  const rows: string[] = [];
  const wall: Record<Way, number[]> = { wideband: [], narrowband: [] };
  for (const g of groups) {
    const items = manifest.filter((i) => i.kind === g.kind && i.rate === 8000).slice(0, options.perGroup);
    if (items.length === 0) continue;
    const expectation = g.kind === 'digit' || g.kind === 'digits' ? DIGITS_NODE : COMMANDS_NODE;
    const score = (texts: readonly string[]): number =>
      g.kind === 'sentence'
        ? texts.filter((t) => commandEdge(t) !== 'else').length
        : items.filter((it, i) => (g.kind === 'command' ? commandEdge(texts[i]!) === it.text : digitsOf(texts[i]!) === (it.digits ?? digitsOf(it.text)))).length;
    const cells: string[] = [];
    for (const way of ['wideband', 'narrowband'] as const) {
      const h = await heard(items, way, expectation);
      wall[way].push(h.wallPerS);
      cells.push(pct(score(h.texts), items.length));
    }
    rows.push(`| ${g.name} | ${cells.join(' | ')} |`);
    log(`telephone band: ${g.name}: wideband ${cells[0]}, narrowband ${cells[1]}`);
  }
  const mean = (xs: readonly number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  return [
    `The telephone band through the call's recogniser path (directed recognition, PocketSphinx library mode), ${options.perGroup ? `first ${options.perGroup} items per group` : 'every item'} of the real-speech set's 8 kHz groups:`,
    '',
    '| group | wideband: a copy upsampled to 16 kHz (the call path, telephoneRate 16000; as before) | narrowband: 8 kHz as it came, `-samprate 8000` |',
    '|---|---|---|',
    ...rows,
    '',
    `Decoding wall time per second of audio (mean over the groups): wideband ${fmt(mean(wall.wideband), 3)} s/s, narrowband ${fmt(mean(wall.narrowband), 3)} s/s.`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const perGroup = process.env['PER_GROUP'] ? Number(process.env['PER_GROUP']) : undefined;
  process.stdout.write(`${await runTelephoneBandBench({ log: (l) => process.stderr.write(`${l}\n`), ...(perGroup ? { perGroup } : {}) })}\n`);
}
