/**
 * Acoustic adaptation of the Debian en-us model with a global MLLR transform (sphinxtrain's `bw`
 * and `mllr_solve`; PocketSphinx loads it with `-mllr FILE`), cross-validated by speaker on the
 * real-speech set: `npm run bench -- mllr` (or `node bench/mllr.ts`). Needs the Debian packages
 * sphinxtrain and sphinxbase-utils (sphinx_fe); says so and does nothing without them. Only the
 * bench needs them: a call loads a committed transform, if one is ever committed.
 *
 * Per rate (16 kHz; 8 kHz, the telephone band decoded natively with our narrowband filter bank),
 * the speakers are split into FOLDS groups (sorted ids, dealt in turn). For each fold, a transform
 * is trained on the other folds' recordings at that rate whose license allows shipping a derived
 * transform (Speech Commands, LibriSpeech, ARCTIC: FSDD, CC BY-SA, is never trained on) and the
 * fold's own items are decoded through the directed path a call uses (PocketsphinxStt, expect())
 * with and without it, in the same run. Every figure printed is on speakers the transform it was
 * decoded with never heard: each item is scored once, by the transform of the other folds.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEBIAN_MODEL_DIR, findExecutable, NARROWBAND_FILTERBANK } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { commandEdge, COMMANDS_NODE, digitsOf, DIGITS_NODE, type Item, itemAudio, realSpeechDir, throughStream } from './real-speech.ts';
import { fmt } from './lib.ts';

const run = promisify(execFile);
const SPHINXTRAIN = '/usr/lib/sphinxtrain';
const FOLDS = 2;

/** Licenses a shipped transform may be derived from (FSDD, CC BY-SA, is not one). */
function trainable(item: Item & { license?: string }): boolean {
  return !/BY-SA/i.test(item.license ?? '') && !item.file.includes('fsdd');
}

/** Whether the tools are here: undefined, or what is missing. */
export function missingTools(): string | undefined {
  const need = [join(SPHINXTRAIN, 'bw'), join(SPHINXTRAIN, 'mllr_solve'), 'sphinx_fe', 'pocketsphinx_mdef_convert'];
  const missing = need.filter((t) => !findExecutable(t));
  return missing.length > 0 ? `${missing.join(', ')} (Debian packages sphinxtrain, sphinxbase-utils)` : undefined;
}

/**
 * The model's mixture weights as a Sphinx-III mixw file, from its quantized `sendump` (the Debian
 * model ships only that; bw needs the weights): sphinxtrain's python/cmusphinx/sendump.py, ported.
 */
export function sendumpToMixw(sendump: Buffer): Buffer {
  let o = 0;
  const u32 = (): number => {
    const v = sendump.readUInt32LE(o);
    o += 4;
    return v;
  };
  const str = (): string | undefined => {
    const n = u32();
    if (n === 0) return undefined;
    const s = sendump.toString('ascii', o, o + n - 1);
    o += n;
    return s;
  };
  str(); // title
  const header = new Map<string, number>();
  for (let h = str(); h !== undefined; h = str()) {
    const [k, v] = h.split(/\s+/);
    if (k && v) header.set(k, Number(v));
  }
  if ((header.get('cluster_count') ?? 0) !== 0) throw new Error('sendump: clustered weights are not supported');
  const shift = header.get('mixw_shift') ?? 10;
  const features = header.get('feature_count') ?? 0;
  const rows = u32(); // densities per feature
  const senones = u32();
  const w = new Float32Array(senones * features * rows);
  for (let f = 0; f < features; f++) {
    for (let d = 0; d < rows; d++) {
      for (let s = 0; s < senones; s++) w[(s * features + f) * rows + d] = Math.pow(1.0001, -(sendump[o + s]! << shift));
      o += senones;
    }
  }
  let head = 's3\nversion 1.0\n';
  while ((head.length + 'endhdr\n'.length) % 4 !== 0) head += ' ';
  head += 'endhdr\n';
  const dims = Buffer.alloc(4 * 5);
  [0x11223344, senones, features, rows, w.length].forEach((v, i) => dims.writeUInt32LE(v, 4 * i));
  return Buffer.concat([Buffer.from(head, 'ascii'), dims, Buffer.from(w.buffer)]);
}

/** The model's files bw reads, with a text mdef and mixture weights, in `dir`. */
async function adaptableModel(dir: string, rate: 8000 | 16000): Promise<{ hmm: string; featParams: string }> {
  const src = join(DEBIAN_MODEL_DIR, 'en-us');
  const hmm = join(dir, 'hmm');
  mkdirSync(hmm);
  for (const f of ['means', 'variances', 'transition_matrices', 'noisedict']) copyFileSync(join(src, f), join(hmm, f));
  await run('pocketsphinx_mdef_convert', ['-text', join(src, 'mdef'), join(hmm, 'mdef.txt')]);
  writeFileSync(join(hmm, 'mixture_weights'), sendumpToMixw(readFileSync(join(src, 'sendump'))));
  let params = readFileSync(join(src, 'feat.params'), 'utf8').split('\n').filter(Boolean);
  if (rate === 8000) {
    params = params.filter((l) => !/^-(lowerf|upperf|nfilt)\s/.test(l));
    params.push(...Object.entries(NARROWBAND_FILTERBANK).map(([k, v]) => `-${k} ${v}`), '-samprate 8000', '-nfft 256');
  }
  const featParams = join(hmm, 'feat.params');
  writeFileSync(featParams, `${params.join('\n')}\n`);
  return { hmm, featParams };
}

/** Trains a global MLLR transform on `items` (at `rate`, padded as the bench pads them); its file. */
export async function trainMllr(items: readonly Item[], rate: 8000 | 16000, dir: string): Promise<string> {
  const { hmm, featParams } = await adaptableModel(dir, rate);
  const wav = join(dir, 'wav');
  const mfc = join(dir, 'mfc');
  const accum = join(dir, 'accum');
  for (const d of [wav, mfc, accum]) mkdirSync(d);
  const ids: string[] = [];
  const lsn: string[] = [];
  for (const [i, it] of items.entries()) {
    const pcm = await itemAudio(it, rate !== 16000);
    const id = `u${i}`;
    writeFileSync(join(wav, `${id}.raw`), pcm);
    ids.push(id);
    lsn.push(`<s> ${it.text} </s> (${id})`);
  }
  writeFileSync(join(dir, 'ids'), `${ids.join('\n')}\n`);
  writeFileSync(join(dir, 'lsn'), `${lsn.join('\n')}\n`);
  await run('sphinx_fe', ['-argfile', featParams, '-samprate', String(rate), ...(rate === 8000 ? ['-nfft', '256'] : []), '-c', join(dir, 'ids'), '-di', wav, '-do', mfc, '-ei', 'raw', '-eo', 'mfc', '-raw', 'yes', '-input_endian', 'little']);
  await run(join(SPHINXTRAIN, 'bw'), [
    '-hmmdir', hmm, '-moddeffn', join(hmm, 'mdef.txt'), '-ts2cbfn', '.ptm.', '-feat', '1s_c_d_dd', '-svspec', '0-12/13-25/26-38',
    '-cmn', 'current', '-agc', 'none', '-dictfn', join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'), '-fdictfn', join(hmm, 'noisedict'),
    '-ctlfn', join(dir, 'ids'), '-lsnfn', join(dir, 'lsn'), '-cepdir', mfc, '-cepext', 'mfc', '-accumdir', accum,
  ], { maxBuffer: 64 << 20 });
  const out = join(dir, 'mllr_matrix');
  await run(join(SPHINXTRAIN, 'mllr_solve'), ['-meanfn', join(hmm, 'means'), '-varfn', join(hmm, 'variances'), '-outmllrfn', out, '-accumdir', accum], { maxBuffer: 64 << 20 });
  return out;
}

const speakerOf = (it: Item & { speaker?: string }): string => it.speaker ?? it.file;

/** Whether the directed path's text is the right answer for `it`. */
function right(it: Item, text: string): boolean {
  return it.kind === 'command' ? commandEdge(text) === it.text : digitsOf(text) === (it.digits ?? digitsOf(it.text));
}

type Group = { name: string; rate: 8000 | 16000; kind: Item['kind'] };
const GROUPS: readonly Group[] = [
  { name: 'commands, 16 kHz', rate: 16000, kind: 'command' },
  { name: 'single digits, 16 kHz', rate: 16000, kind: 'digit' },
  { name: 'digit strings, 16 kHz', rate: 16000, kind: 'digits' },
  { name: 'sentences at the commands node, 16 kHz (false accepts)', rate: 16000, kind: 'sentence' },
  { name: 'commands, telephone band', rate: 8000, kind: 'command' },
  { name: 'single digits, 8 kHz (FSDD)', rate: 8000, kind: 'digit' },
  { name: 'digit strings, 8 kHz', rate: 8000, kind: 'digits' },
  { name: 'sentences at the commands node, telephone band (false accepts)', rate: 8000, kind: 'sentence' },
];

export interface MllrOptions {
  log?: (line: string) => void;
  /** Only these rates; default both. */
  rates?: readonly (8000 | 16000)[];
}

/** The cross-validated table (markdown), or a line saying why it was not run. */
export async function runMllrBench(options: MllrOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const missing = missingTools();
  if (missing) return `MLLR adaptation: not run, missing ${missing}.`;
  const manifest = JSON.parse(readFileSync(join(realSpeechDir(), 'manifest.json'), 'utf8')) as (Item & { license?: string; speaker?: string })[];
  const score = new Map<string, { n: number; ours: number; mllr: number }>();
  for (const rate of options.rates ?? [16000, 8000]) {
    const atRate = manifest.filter((i) => i.rate === rate);
    const speakers = [...new Set(atRate.map(speakerOf))].sort();
    for (let fold = 0; fold < FOLDS; fold++) {
      const held = new Set(speakers.filter((_, i) => i % FOLDS === fold));
      const train = atRate.filter((i) => !held.has(speakerOf(i)) && trainable(i));
      const dir = mkdtempSync(join(tmpdir(), 'mllr-'));
      try {
        const t0 = Date.now();
        const mllr = await trainMllr(train, rate, dir);
        log(`mllr: ${rate} Hz fold ${fold}: trained on ${train.length} items (${speakers.length - held.size} speakers) in ${Date.now() - t0} ms`);
        for (const g of GROUPS.filter((x) => x.rate === rate)) {
          const items = atRate.filter((i) => i.kind === g.kind && held.has(speakerOf(i)));
          if (items.length === 0) continue;
          const node = g.kind === 'digit' || g.kind === 'digits' ? DIGITS_NODE : COMMANDS_NODE;
          // The transform is trained on the features it is measured on: at 8 kHz, the narrowband decoder's.
          const narrowband = rate === 8000;
          const ours = (await throughStream(items, 'directed', node, [], { narrowband })).texts;
          const adapted = (await throughStream(items, 'directed', node, ['-mllr', mllr], { narrowband })).texts;
          const ok = (texts: readonly string[]): number =>
            g.kind === 'sentence' ? texts.filter((t) => commandEdge(t) !== 'else').length : items.filter((it, i) => right(it, texts[i]!)).length;
          const s = score.get(g.name) ?? { n: 0, ours: 0, mllr: 0 };
          s.n += items.length;
          s.ours += ok(ours);
          s.mllr += ok(adapted);
          score.set(g.name, s);
          log(`mllr: ${g.name} fold ${fold}: ours ${ok(ours)}/${items.length}, mllr ${ok(adapted)}/${items.length}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  const pct = (k: number, n: number): string => `${fmt((100 * k) / n)} % (${k}/${n})`;
  return [
    `MLLR adaptation, ${FOLDS}-fold cross-validated by speaker (every item decoded with a transform trained on other speakers only; FSDD never trained on), directed path:`,
    '',
    '| group | ours | with the held-out MLLR transform |',
    '|---|---|---|',
    ...GROUPS.filter((g) => score.has(g.name)).map((g) => {
      const s = score.get(g.name)!;
      return `| ${g.name} | ${pct(s.ours, s.n)} | ${pct(s.mllr, s.n)} |`;
    }),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rates = process.env['MLLR_RATES'] ? process.env['MLLR_RATES'].split(',').map((r) => Number(r) as 8000 | 16000) : undefined;
  process.stdout.write(`${await runMllrBench({ log: (l) => process.stderr.write(`${l}\n`), ...(rates ? { rates } : {}) })}\n`);
}
