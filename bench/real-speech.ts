/**
 * Real-speech recognition benchmark, part of `npm run bench -- recognition`: recordings of real
 * people (Speech Commands, FSDD, LibriSpeech, CMU ARCTIC), read from the shared data folder
 * (REAL_SPEECH_DIR, default ../shared/data/real-speech beside the checkout; never copied into
 * the project; its README.md and manifest.json describe it). Skipped, and said so, when absent.
 *
 * Each group (commands, single digits, digit strings, sentences; 16 kHz and the telephone band)
 * runs four ways, in the same run:
 *   - directed, per call (the headline): the path a call uses, each recording its own call's
 *     first utterance (throughCalls), as a real call hears one caller: told the node's
 *     expectation (expect(); closed: keyword edges yes/no/up/..., or a digits value), on a pooled
 *     decoder that starts each call on the model's cepstral mean, with the first utterance's
 *     second decode; 8 kHz audio reaches it as a call's does (src/voice/call-rate.ts: PocketSphinx
 *     takes a 16 kHz copy, which it hears better than its narrowband decoder: `npm run bench --
 *     telephone-band` compares the two), starting on the telephone band's cepstral mean (`npm
 *     run bench -- telephone-mean` compares it with the model's own);
 *   - directed, one stream per group: the same path, the group's items one after another in one
 *     stream (throughStream), so each is decoded on the mean learnt from the recordings before it:
 *     other speakers' (Speech Commands is ordered by word), or mostly the same speaker's (FSDD is
 *     ordered by speaker: a caller's later answers); what this bench measured until the per-call
 *     column, kept to compare;
 *   - open: the recognition path a call used before directed recognition: one stream per group
 *     at 16 kHz (8 kHz audio resampled, as a call did), told the node's words through bias();
 *   - baseline: PocketSphinx's own JSGF decoding, `pocketsphinx_continuous -jsgf` with a grammar
 *     of the same words, one process per item, on 16 kHz audio (8 kHz resampled).
 * Each item is padded with 400 ms of silence before and after (the README: FSDD digits have
 * almost none); items in the manifest's order.
 * Scores: commands, the keyword edge the flow takes (the first of yes, no, up, down, left, right,
 * on, off, stop, go whose keyword the text holds) is the one spoken; digits, the digit string
 * read from the text (number words; "oh" and "zero" are 0) equals the one spoken; sentences, the
 * word error rate of the open path, and false accepts (both directed ways): sentences spoken at the commands node
 * (directed with the commands' expectation) that took a keyword edge, and, each its own row, the
 * same for the set's other speech said where it is not expected: single digits and digit strings
 * at the commands node, and the commands other than yes and no at a yes/no node (keyword edges
 * "yes" and "no" only), beside how many of the yes and no items that node heard right. Single
 * digits are also decoded, both directed ways, at a node that states it expects one digit
 * (ONE_DIGIT_NODE: a digits variable with max_digits 1), their own table, and digit strings per
 * call at a node that states each string's length.
 * Alone: `node bench/real-speech.ts`; PER_GROUP=n takes a group's first n items,
 * REAL_SPEECH_GROUPS="single digits" only the groups whose name holds it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createResampler } from '../src/providers/audio/resample.ts';
import { DecoderPool } from '../src/providers/pocketsphinx/decoder-pool.ts';
import { DEBIAN_MODEL_DIR, type PocketsphinxOptions, PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttExpectation } from '../src/providers/stt.ts';
import { decodesNatively, openRecogniser } from '../src/voice/call-rate.ts';
import { keywordMatch } from '../src/voice/engines/flow.engine.ts';
import { fmt, wordErrors } from './lib.ts';

/** The shared folder of real recordings; REAL_SPEECH_DIR overrides. */
export function realSpeechDir(): string {
  return process.env['REAL_SPEECH_DIR'] ?? fileURLToPath(new URL('../../shared/data/real-speech/', import.meta.url));
}

export interface Item {
  file: string;
  text: string;
  rate: 8000 | 16000;
  kind: 'command' | 'digit' | 'digits' | 'sentence';
  digits?: string;
}

export const COMMANDS = ['yes', 'no', 'up', 'down', 'left', 'right', 'on', 'off', 'stop', 'go'];
const DIGIT_OF: Readonly<Record<string, string>> = {
  zero: '0', oh: '0', o: '0', one: '1', two: '2', three: '3', four: '4', five: '5', six: '6', seven: '7', eight: '8', nine: '9',
};
const PAD_MS = 400;

/** The edge a commands node takes on `text`: the first keyword edge that matches, or 'else'. */
export function commandEdge(text: string): string {
  return COMMANDS.find((k) => keywordMatch([k], text)) ?? 'else';
}

/** The digit string a text spells (number words and digits), '' when none. */
export function digitsOf(text: string): string {
  return text.toLowerCase().split(/\s+/).map((w) => DIGIT_OF[w] ?? (/^\d+$/.test(w) ? w : '')).join('');
}

/** A mono 16-bit PCM WAV's samples (the data chunk, wherever it sits). */
export function readWav(path: string): Int16Array {
  const b = readFileSync(path);
  let o = 12;
  while (o + 8 <= b.length) {
    const id = b.toString('ascii', o, o + 4);
    const size = b.readUInt32LE(o + 4);
    if (id === 'data') return new Int16Array(b.buffer.slice(b.byteOffset + o + 8, b.byteOffset + o + 8 + size - (size % 2)));
    o += 8 + size + (size % 2);
  }
  throw new Error(`${path}: no data chunk`);
}

export function padded(pcm: Int16Array, rate: number): Int16Array {
  const pad = (PAD_MS * rate) / 1000;
  const out = new Int16Array(pcm.length + 2 * pad);
  out.set(pcm, pad);
  return out;
}

export async function to16k(pcm: Int16Array, rate: number): Promise<Int16Array> {
  if (rate === 16000) return pcm;
  const r = await createResampler(rate, 16000);
  try {
    return r.process(pcm);
  } finally {
    r.close();
  }
}

/** An item's recording, padded: at its own rate when `narrow`, else as 16 kHz (8 kHz resampled). */
export async function itemAudio(it: Item, narrow: boolean): Promise<Int16Array> {
  const raw = padded(readWav(join(realSpeechDir(), it.file)), it.rate);
  return narrow ? raw : to16k(raw, it.rate);
}

export const COMMANDS_NODE: SttExpectation = { closed: true, phrases: COMMANDS, values: [] };
/** A node asking a yes/no question with two keyword edges: two of the commands. */
export const YES_NO_NODE: SttExpectation = { closed: true, phrases: ['yes', 'no'], values: [] };

/** The edge the yes/no node takes on `text`: 'yes', 'no' or 'else'. */
export function yesNoEdge(text: string): string {
  return YES_NO_NODE.phrases.find((k) => keywordMatch([k], text)) ?? 'else';
}
export const DIGITS_NODE: SttExpectation = { closed: true, phrases: [], values: ['digits'] };
/** A node that asks for one digit (a digits variable with max_digits 1: a one-key menu, a rating). */
export const ONE_DIGIT_NODE: SttExpectation = { ...DIGITS_NODE, digitCount: { min: 1, max: 1 } };

/** What one stream heard, and what its decoder thread spent on it. */
export interface Heard {
  texts: string[];
  /** The decoder thread's CPU (user + system) over the items, model load excluded, s. */
  cpuS: number;
  /** Audio decoded (the items with their padding), s. */
  audioS: number;
}

/** CPU of the pool's decoder threads, s (Worker.cpuUsage: each thread's own rusage). */
async function decoderCpuS(pool: DecoderPool): Promise<number> {
  // An idle decoder's thread does not hold the process open: the answer is awaited with a timer that does.
  const keep = setInterval(() => {}, 1000);
  const used = await Promise.all(pool.threads.map((t) => t.worker.cpuUsage())).finally(() => clearInterval(keep));
  return used.reduce((sum, u) => sum + (u.user + u.system) / 1e6, 0);
}

/**
 * One stream, the items in order; the texts heard. `extraArgs` are added to the decoder's own
 * arguments (a candidate setting); `narrowband` decodes 8 kHz items at 8 kHz whatever calls do.
 * The stream's one decoder first decodes 500 ms of silence, so its CPU from there on is the items'
 * decoding, not the model's load; the directed path's grammar decodes run on the same thread and
 * are counted.
 */
export async function throughStream(items: readonly Item[], way: 'open' | 'directed', expectation: SttExpectation, extraArgs: readonly string[] = [], options: { narrowband?: boolean } = {}): Promise<Heard> {
  const pool = new DecoderPool({ maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool, extraArgs });
  // 8 kHz audio reaches the directed path as a call gives it (src/voice/call-rate.ts): natively only
  // to a recogniser that hears the telephone band better so (PocketSphinx takes a 16 kHz copy).
  // (`narrowband` forces the narrowband decoder: a bench of that decoder itself.)
  const narrow = way === 'directed' && items[0]?.rate === 8000 && (options.narrowband ?? decodesNatively(stt, 8000));
  const s = await stt.openStream({ ...(narrow ? { sampleRateHz: 8000 as const } : {}) });
  const rate = narrow ? 8000 : 16000;
  const out: string[] = [];
  let samples = 0;
  try {
    s.write(new Int16Array(rate / 2));
    await s.finalize();
    const loaded = await decoderCpuS(pool);
    if (way === 'directed') s.expect?.(expectation);
    else s.bias?.(expectation.phrases.length > 0 ? expectation.phrases : ['zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine']);
    for (const it of items) {
      const pcm = await itemAudio(it, narrow);
      const chunk = narrow ? 160 : 320;
      for (let o = 0; o < pcm.length; o += chunk) s.write(pcm.subarray(o, o + chunk));
      samples += pcm.length;
      out.push((await s.finalize()).text);
    }
    return { texts: out, cpuS: (await decoderCpuS(pool)) - loaded, audioS: samples / rate };
  } finally {
    await s.close();
    await pool.close();
  }
}

/**
 * Each item as a call's first utterance: a stream of its own (one call each), told `expectation`
 * (directed), on one decoder the pool hands from call to call as it does in service, so each
 * starts on the model's cepstral mean, not one learnt from other speakers (the pool puts it back
 * between holders), and gets what a call's first utterance gets (the second decode on the mean
 * learnt from it, unless `redecodeFirstUtterance` is false). A recording is one caller's answer:
 * this is what a call does with it. Each is opened as a call opens its recogniser
 * (src/voice/call-rate.ts openRecogniser at the item's rate): an 8 kHz item is written as it came
 * and PocketSphinx gets its own 16 kHz copy, told it came at 8 kHz (so a telephone-band call's
 * starting mean, unless `telephoneBandMean` is false). The decoder's CPU is counted as in
 * throughStream.
 */
export async function throughCalls(items: readonly Item[], expectation: SttExpectation, extraArgs: readonly string[] = [], options: Pick<PocketsphinxOptions, 'redecodeFirstUtterance' | 'telephoneBandMean'> = {}): Promise<Heard> {
  const pool = new DecoderPool({ warm: 0, maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool, extraArgs, ...options });
  const out: string[] = [];
  let audioS = 0;
  try {
    // The model loads outside the measured CPU: a first call decodes silence.
    const warm = await stt.openStream();
    warm.write(new Int16Array(8000));
    await warm.finalize();
    await warm.close();
    const loaded = await decoderCpuS(pool);
    for (const it of items) {
      const pcm = padded(readWav(join(realSpeechDir(), it.file)), it.rate);
      const s = await openRecogniser(stt, it.rate, {});
      try {
        s.expect?.(expectation);
        const chunk = it.rate / 50; // 20 ms, as a call's frames come
        for (let o = 0; o < pcm.length; o += chunk) s.write(pcm.subarray(o, o + chunk));
        audioS += pcm.length / it.rate;
        out.push((await s.finalize()).text);
      } finally {
        await s.close();
      }
    }
    return { texts: out, cpuS: (await decoderCpuS(pool)) - loaded, audioS };
  } finally {
    await stt.close();
    await pool.close();
  }
}

/** pocketsphinx_continuous -jsgf, one process per item, 16 kHz. */
async function baseline(items: readonly Item[], jsgf: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'real-speech-'));
  const m = DEBIAN_MODEL_DIR;
  try {
    writeFileSync(join(dir, 'g.jsgf'), jsgf);
    const out: string[] = [];
    for (const it of items) {
      const pcm = await itemAudio(it, false);
      writeFileSync(join(dir, 'a.raw'), pcm);
      out.push(
        await new Promise<string>((resolve, reject) => {
          const p = spawn('pocketsphinx_continuous', ['-hmm', join(m, 'en-us'), '-dict', join(m, 'cmudict-en-us.dict'), '-jsgf', join(dir, 'g.jsgf'), '-infile', join(dir, 'a.raw'), '-logfn', '/dev/null'], { stdio: ['ignore', 'pipe', 'ignore'] });
          let text = '';
          p.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
          p.on('error', reject);
          p.on('close', () => resolve(text.split('\n').map((l) => l.trim()).filter(Boolean).join(' ')));
        }),
      );
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const COMMANDS_JSGF = `#JSGF V1.0;\ngrammar commands;\npublic <c> = ${COMMANDS.join(' | ')};\n`;
const DIGITS_JSGF = `#JSGF V1.0;\ngrammar digits;\npublic <d> = (${Object.keys(DIGIT_OF).filter((w) => w !== 'o').join(' | ')})+;\n`;

interface Group {
  name: string;
  items: Item[];
}

function groups(manifest: readonly Item[]): Group[] {
  const g = (name: string, kind: Item['kind'], rate: number): Group => ({ name, items: manifest.filter((i) => i.kind === kind && i.rate === rate) });
  return [
    g('commands, 16 kHz', 'command', 16000),
    g('commands, telephone band', 'command', 8000),
    g('single digits, 16 kHz', 'digit', 16000),
    g('single digits, 8 kHz', 'digit', 8000),
    g('digit strings, 16 kHz', 'digits', 16000),
    g('digit strings, 8 kHz', 'digits', 8000),
    g('sentences, 16 kHz', 'sentence', 16000),
    g('sentences, telephone band', 'sentence', 8000),
  ];
}

const pct = (ok: number, n: number): string => (n === 0 ? '-' : `${fmt((100 * ok) / n)} % (${ok}/${n})`);

export interface RealSpeechOptions {
  log?: (line: string) => void;
  /** At most this many items per group (a quick run); default all. */
  perGroup?: number;
  /** Only the groups whose name holds this (REAL_SPEECH_GROUPS="single digits"); default all. */
  groups?: string;
  /**
   * Decoder arguments to weigh against ours in the same run (e.g. ['-maxhmmpf', '3000']): the
   * open and directed paths also run with them added, and the decoder's CPU per second of audio
   * is reported for both. Default none (ours only).
   */
  candidateArgs?: readonly string[];
}

/** Decoder arguments from the environment: DECODER_CANDIDATE_ARGS="-maxhmmpf 3000 -topn 2". */
export function candidateArgsFromEnv(value: string | undefined): string[] {
  const args = (value ?? '').trim().split(/\s+/).filter(Boolean);
  if (args.length % 2 !== 0 || args.some((a, i) => (i % 2 === 0) !== a.startsWith('-'))) {
    throw new Error(`DECODER_CANDIDATE_ARGS must be pairs of -flag value (got "${value ?? ''}")`);
  }
  return args;
}

/** CPU spent and audio heard, summed per path and setting. */
class CpuTally {
  readonly #sums = new Map<string, { cpuS: number; audioS: number }>();

  add(key: string, heard: Heard): void {
    const s = this.#sums.get(key) ?? { cpuS: 0, audioS: 0 };
    s.cpuS += heard.cpuS;
    s.audioS += heard.audioS;
    this.#sums.set(key, s);
  }

  /** Core-seconds per second of audio, or undefined when nothing was heard. */
  perS(key: string): number | undefined {
    const s = this.#sums.get(key);
    return s && s.audioS > 0 ? s.cpuS / s.audioS : undefined;
  }
}

/** How an item reaches the recogniser: see the module's comment. */
type Way = 'call' | 'directed' | 'open';
const WAYS: readonly Way[] = ['call', 'directed', 'open'];
const WAY_LABEL: Readonly<Record<Way, string>> = {
  call: 'directed, per call (each item a call\'s first utterance: what a call does)',
  directed: 'directed, one stream per group (each item on the mean learnt from the recordings before it)',
  open: 'open (bias, one stream per group)',
};
const WAY_SHORT: Readonly<Record<Way, string>> = { call: 'per call', directed: 'one stream', open: 'open' };

/** The real-speech table (markdown), or a line saying why it was not run. */
export async function runRealSpeechBench(options: RealSpeechOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return `Real speech: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const candidate = options.candidateArgs && options.candidateArgs.length > 0 ? options.candidateArgs : undefined;
  const settings = candidate ? (['ours', 'candidate'] as const) : (['ours'] as const);
  type Setting = (typeof settings)[number];
  const argsOf = (setting: Setting): readonly string[] => (setting === 'candidate' ? candidate ?? [] : []);
  // The columns: each way with our setting, then each with the candidate's.
  const columns = settings.flatMap((setting) => WAYS.map((way) => ({ way, setting })));
  const cpu = new CpuTally();
  const rows: string[] = [];
  /** Out-of-grammar speech that took a keyword edge, per column (`${way}/${setting}`), and the items. */
  const tally = () => ({ taken: new Map<string, number>(), items: 0 });
  const sentences = tally();
  const oneWord = tally();
  const digitStrings = tally();
  /** Single digits heard right at ONE_DIGIT_NODE, per group, per directed column. */
  const oneDigit: string[] = [];
  /** Digit strings heard right per call at a node stating their count, per group. */
  const counted: string[] = [];
  /** Transcripts the candidate heard otherwise than ours, of those compared (every path and node). */
  const changed = { texts: 0, items: 0 };
  // Commands at the yes/no node: the others taking the yes or no edge (wrong), and yes and no heard right.
  const atYesNo = { ...tally(), right: new Map<string, number>(), yesNoItems: 0 };
  const add = (m: Map<string, number>, key: string, n: number): void => {
    m.set(key, (m.get(key) ?? 0) + n);
  };
  for (const group of groups(manifest).filter((g) => g.name.includes(options.groups ?? ''))) {
    const items = group.items.slice(0, options.perGroup ?? group.items.length);
    if (items.length === 0) continue;
    const kind = items[0]!.kind;
    const expectation = kind === 'digit' || kind === 'digits' ? DIGITS_NODE : COMMANDS_NODE;
    const ours = new Map<string, string[]>();
    const heard = async (way: Way, setting: Setting, at = expectation): Promise<string[]> => {
      const h = way === 'call' ? await throughCalls(items, at, argsOf(setting)) : await throughStream(items, way, at, argsOf(setting));
      cpu.add(`${way}/${setting}`, h);
      // Ours is always heard first: the candidate's transcripts are compared with it, item by item.
      const key = `${way} ${JSON.stringify(at)}`;
      if (setting === 'ours') ours.set(key, h.texts);
      else {
        changed.items += h.texts.length;
        changed.texts += h.texts.filter((t, i) => t !== ours.get(key)?.[i]).length;
      }
      return h.texts;
    };
    const texts = new Map<string, string[]>();
    for (const c of columns) texts.set(`${c.way}/${c.setting}`, await heard(c.way, c.setting));
    const textsOf = (c: { way: Way; setting: Setting }): string[] => texts.get(`${c.way}/${c.setting}`)!;
    if (kind === 'sentence') {
      const wer = (t: readonly string[]): string => {
        const e = items.reduce((acc, it, i) => {
          const w = wordErrors(it.text, t[i]!);
          return { errors: acc.errors + w.errors, words: acc.words + w.words };
        }, { errors: 0, words: 0 });
        return `WER ${fmt((100 * e.errors) / e.words)} %`;
      };
      const accepted = (t: readonly string[]): number => t.filter((x) => commandEdge(x) !== 'else').length;
      for (const c of columns) if (c.way !== 'open') add(sentences.taken, `${c.way}/${c.setting}`, accepted(textsOf(c)));
      sentences.items += items.length;
      const cells = columns.map((c) => (c.way === 'open' ? wer(textsOf(c)) : `keyword edge taken: ${pct(accepted(textsOf(c)), items.length)}`));
      rows.push(`| ${group.name} | ${cells.join(' | ')} | - |`);
      log(`real speech: ${group.name}: ${cells.join(', ')}`);
      continue;
    }
    // Answers outside the grammar, directed both ways: single digits (one word) and digit strings
    // said at the commands node; the commands other than yes and no at a yes/no node.
    for (const c of columns) {
      if (c.way === 'open') continue;
      const key = `${c.way}/${c.setting}`;
      if (kind === 'digit' || kind === 'digits') {
        const atCommands = await heard(c.way, c.setting, COMMANDS_NODE);
        add((kind === 'digit' ? oneWord : digitStrings).taken, key, atCommands.filter((t) => commandEdge(t) !== 'else').length);
      } else {
        const expected = items.map((it) => (YES_NO_NODE.phrases.includes(it.text) ? it.text : 'else'));
        const edges = (await heard(c.way, c.setting, YES_NO_NODE)).map(yesNoEdge);
        add(atYesNo.taken, key, edges.filter((e, i) => expected[i] === 'else' && e !== 'else').length);
        add(atYesNo.right, key, edges.filter((e, i) => expected[i] !== 'else' && e === expected[i]).length);
      }
    }
    if (kind === 'digit') {
      oneWord.items += items.length;
      const cells: string[] = [];
      for (const c of columns.filter((c) => c.way !== 'open')) {
        const t = await heard(c.way, c.setting, ONE_DIGIT_NODE);
        cells.push(pct(items.filter((it, i) => digitsOf(t[i]!) === (it.digits ?? digitsOf(it.text))).length, items.length));
      }
      oneDigit.push(`| ${group.name} | ${cells.join(' | ')} |`);
      log(`real speech: ${group.name} at a one-digit node: ${cells.join(', ')}`);
    }
    if (kind === 'digits') {
      digitStrings.items += items.length;
      // Per call at a node stating each string's length (min_digits = max_digits: "your 4-digit PIN").
      let right = 0;
      for (const n of new Set(items.map((it) => (it.digits ?? digitsOf(it.text)).length))) {
        const sub = items.filter((it) => (it.digits ?? digitsOf(it.text)).length === n);
        const t = (await throughCalls(sub, { ...DIGITS_NODE, digitCount: { min: n, max: n } })).texts;
        right += sub.filter((it, i) => digitsOf(t[i]!) === (it.digits ?? digitsOf(it.text))).length;
      }
      counted.push(`${group.name} ${pct(right, items.length)}`);
      log(`real speech: ${group.name} at a node stating the count, per call: ${pct(right, items.length)}`);
    }
    if (kind === 'command') {
      atYesNo.items += items.filter((it) => !YES_NO_NODE.phrases.includes(it.text)).length;
      atYesNo.yesNoItems += items.filter((it) => YES_NO_NODE.phrases.includes(it.text)).length;
    }
    const base = await baseline(items, kind === 'command' ? COMMANDS_JSGF : DIGITS_JSGF);
    const right = (t: readonly string[]): number =>
      items.filter((it, i) => (kind === 'command' ? commandEdge(t[i]!) === it.text : digitsOf(t[i]!) === (it.digits ?? digitsOf(it.text)))).length;
    const cells = columns.map((c) => pct(right(textsOf(c)), items.length));
    rows.push(`| ${group.name} | ${cells.join(' | ')} | ${pct(right(base), items.length)} |`);
    log(`real speech: ${group.name}: ${cells.join(', ')}, baseline ${right(base)} of ${items.length}`);
  }
  const cand = candidate ? candidate.join(' ') : '';
  const named = (c: { way: Way; setting: Setting }, label = WAY_LABEL): string => (c.setting === 'candidate' ? `${label[c.way]}, \`${cand}\`` : label[c.way]);
  const directedColumns = columns.filter((c) => c.way !== 'open');
  const line = (what: string, t: { taken: Map<string, number>; items: number }): string =>
    `${what}: ${directedColumns.map((c) => `${named(c, WAY_SHORT)} ${pct(t.taken.get(`${c.way}/${c.setting}`) ?? 0, t.items)}`).join('; ')}.`;
  const perS = (key: string): string => {
    const v = cpu.perS(key);
    return v === undefined ? '-' : fmt(v, 3);
  };
  const ratio = (way: string): string => {
    const a = cpu.perS(`${way}/ours`);
    const b = cpu.perS(`${way}/candidate`);
    return a && b ? fmt(b / a, 2) : '-';
  };
  return [
    `Real speech (${dir.replace(/\/$/, '').split('/').slice(-3).join('/')}), ${manifest.length} recordings of real people, PocketSphinx library mode${candidate ? `; candidate decoder setting: \`${cand}\` added to ours, in the same run` : ''}. The headline is the first column: each recording is one caller's answer, decoded as its call's first utterance; the stream columns decode a group's items one after another in one stream, each on the cepstral mean learnt from the recordings before it: other speakers', or, for FSDD's 8 kHz digits (ordered by speaker), mostly the same speaker's, as a caller's later answers in one call (kept for comparison with earlier runs):`,
    '',
    `| group | ${columns.map((c) => named(c)).join(' | ')} | baseline: pocketsphinx_continuous -jsgf |`,
    `|---|${columns.map(() => '---|').join('')}---|`,
    ...rows,
    '',
    'Single digits at a node that states it expects one digit (a digits variable with `max_digits: 1`, as a one-key menu or a rating asks; the table\'s digit rows are a node taking a digit string of any length):',
    '',
    `| group | ${directedColumns.map((c) => named(c)).join(' | ')} |`,
    `|---|${directedColumns.map(() => '---|').join('')}`,
    ...oneDigit,
    '',
    ...(counted.length > 0 ? [`Digit strings per call at a node that states how many digits it takes (\`min_digits\` = \`max_digits\` = the string's length, as "your 4-digit PIN" does): ${counted.join('; ')}.`, ''] : []),
    line('Out-of-grammar sentences that took a keyword edge at the commands node', sentences),
    line('Out-of-grammar single words (digits said at the commands node) that took a keyword edge', oneWord),
    line('Out-of-grammar digit strings (said at the commands node) that took a keyword edge', digitStrings),
    `${line('Commands other than yes and no, said at a yes/no node (keyword edges "yes" and "no"), that took one of its edges', atYesNo).slice(0, -1)}; the yes and no items at that node heard right: ${directedColumns.map((c) => `${named(c, WAY_SHORT)} ${pct(atYesNo.right.get(`${c.way}/${c.setting}`) ?? 0, atYesNo.yesNoItems)}`).join('; ')}.`,
    ...(candidate ? [`Transcripts heard otherwise with \`${cand}\` than without it (every path and node above): ${changed.texts} of ${changed.items}.`] : []),
    '',
    'The decoder thread\'s CPU (its own rusage, user + system, model load excluded) per second of audio decoded, core-s/s:',
    '',
    candidate ? `| path | ours | \`${cand}\` | ratio |` : '| path | ours |',
    candidate ? '|---|---|---|---|' : '|---|---|',
    ...WAYS.map((way) => (candidate ? `| ${WAY_LABEL[way]} | ${perS(`${way}/ours`)} | ${perS(`${way}/candidate`)} | ${ratio(way)} |` : `| ${WAY_LABEL[way]} | ${perS(`${way}/ours`)} |`)),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const perGroup = process.env['PER_GROUP'] ? Number(process.env['PER_GROUP']) : undefined;
  const candidateArgs = candidateArgsFromEnv(process.env['DECODER_CANDIDATE_ARGS']);
  const only = process.env['REAL_SPEECH_GROUPS'];
  process.stdout.write(`${await runRealSpeechBench({ log: (l) => process.stderr.write(`${l}\n`), candidateArgs, ...(perGroup ? { perGroup } : {}), ...(only ? { groups: only } : {}) })}\n`);
}
