/**
 * A phone call's starting cepstral mean (`npm run bench -- telephone-mean`; issue 25: "think about
 * cepstral mean initialisation for short utterances, and about the 8 kHz band"). Three parts, each
 * with its baseline in the same run:
 *   1. The shift, measured again as TELEPHONE_BAND_CEPSTRAL_SHIFT was
 *      (src/providers/pocketsphinx/pocketsphinx.stt.ts): each of Flite's four 16 kHz voices speaks
 *      SHIFT_SENTENCES as one stream, once as synthesized and once through the 8 kHz channel
 *      (16 -> 8 -> 16 kHz, Speex, as a phone call's copy is made); the live mean the decoder has
 *      learnt after the last sentence, averaged over the voices, channel minus wideband. Printed
 *      beside the committed shift, with the largest difference.
 *   2. Its effect on phone calls' first answers: the real-speech set's 8 kHz groups, each recording
 *      its own call's first utterance (bench/real-speech.ts throughCalls: opened as a call opens
 *      its recogniser), starting on the telephone band's mean (ours) and on the model's -cmninit
 *      (the baseline, as before). Commands at the commands node, single digits at a digits node and
 *      at a one-digit node, digit strings at a digits node and at one stating their length, and
 *      sentences at the commands node (a keyword edge taken: a false accept).
 *   3. Flite's five voices through the telephone band, with and without: first answers (each
 *      command, digit and three digit strings its own call, at the node that expects it), and the
 *      recognition bench's phrases, each voice's ten as one call told each phrase's keywords
 *      (bench/recognition.ts): what the mean learns from the caller afterwards still works from
 *      the new start.
 * Recognition is deterministic: the figures do not depend on the machine's load.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createResampler } from '../src/providers/audio/resample.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { DecoderPool } from '../src/providers/pocketsphinx/decoder-pool.ts';
import type { CmnState, DecoderOut } from '../src/providers/pocketsphinx/decoder.worker.ts';
import { PocketsphinxStt, TELEPHONE_BAND_CEPSTRAL_SHIFT } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttExpectation } from '../src/providers/stt.ts';
import { openRecogniser } from '../src/voice/call-rate.ts';
import { keywordMatch } from '../src/voice/engines/flow.engine.ts';
import { concatPcm } from '../src/lib/pcm.ts';
import { fmt, machine } from './lib.ts';
import { COMMANDS, COMMANDS_NODE, DIGITS_NODE, ONE_DIGIT_NODE, type Item, commandEdge, digitsOf, padded, realSpeechDir, throughCalls } from './real-speech.ts';
import { CALLER_PHRASES, buildCorpus, through } from './recognition.ts';

/**
 * Flite's 16 kHz voices, and what they say to measure the shift. No real recording is used: the
 * real-speech figures of part 2 are independent of it. Part 3's Flite answers share words with
 * these sentences ("stop", the digits), spoken by the same voices.
 */
const SHIFT_VOICES = ['kal16', 'slt', 'rms', 'awb'];
/** The voices part 3 hears: those and kal, Flite's 8 kHz voice. */
const FLITE_VOICES = [...SHIFT_VOICES, 'kal'];
const SHIFT_SENTENCES = [
  'i would like to check my account balance please',
  'yes that is right',
  'no thank you',
  'can you tell me when the store opens tomorrow',
  'my number is four five six seven',
  'stop',
  'go ahead and book it for friday',
  'i need help with my order it has not arrived',
  'one two three four five six seven eight nine zero',
  'please transfer me to a person',
];

/** `text` as `voice` (a Flite voice's short name) says it, 16 kHz. */
async function spoken(tts: FliteTts, voice: string, text: string): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: `flite-${voice}` })) parts.push(c);
  return concatPcm(parts);
}

/**
 * Per voice, how many of its items `hear` gets right on a recogniser starting a phone call on the
 * telephone band's mean (ours) and on one starting it on the model's (the baseline): the table's
 * rows, and a total.
 */
async function perVoice(log: (line: string) => void, heading: string, audioOf: (voice: string) => Promise<Int16Array[]>, hear: (stt: PocketsphinxStt, audio: readonly Int16Array[], voice: string) => Promise<number>): Promise<string[]> {
  const rows: string[] = [];
  const total = { ours: 0, base: 0, n: 0 };
  for (const voice of FLITE_VOICES) {
    const audio = await audioOf(voice);
    const right: number[] = [];
    for (const telephoneBandMean of [true, false]) {
      const stt = new PocketsphinxStt({ mode: 'library', telephoneBandMean });
      try {
        right.push(await hear(stt, audio, voice));
      } finally {
        await stt.close();
      }
    }
    total.ours += right[0]!;
    total.base += right[1]!;
    total.n += audio.length;
    rows.push(`| ${voice} | ${right[0]}/${audio.length} | ${right[1]}/${audio.length} |`);
    log(`telephone mean: ${heading}, ${voice}: ours ${right[0]}, model's ${right[1]} of ${audio.length}`);
  }
  return [`| ${heading} | telephone band's mean (ours) | model's -cmninit (baseline) |`, '|---|---|---|', ...rows, `| all | ${pct(total.ours, total.n)} | ${pct(total.base, total.n)} |`];
}

/** The live mean a decoder has learnt after `audio` (16 kHz utterances) as one stream: read from the worker's finals. */
async function learntMean(audio: readonly Int16Array[]): Promise<number[]> {
  const pool = new DecoderPool({ warm: 0, maxDecoders: 1 });
  // The worker hands its mean back with each final (decoder.worker.ts): watch the lease's messages.
  let last: CmnState | undefined;
  const lease = pool.lease.bind(pool);
  pool.lease = (data, handler) => lease(data, { ...handler, message: (m: DecoderOut) => {
    if (m.type === 'final' && m.cmn) last = m.cmn;
    handler.message(m);
  } });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool });
  try {
    const s = await stt.openStream();
    for (const pcm of audio) {
      for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
      await s.finalize();
    }
    await s.close();
  } finally {
    await stt.close();
    await pool.close();
  }
  if (!last) throw new Error('the decoder reported no cepstral mean (its layout is not the one read: decoder.worker.ts cmnAccess)');
  return last.mean;
}

/** The shift measured now: per coefficient, the voices' mean through the channel minus as synthesized. */
async function measuredShift(log: (line: string) => void): Promise<number[]> {
  const tts = new FliteTts();
  const wide: number[][] = [];
  const tel: number[][] = [];
  try {
    for (const voice of SHIFT_VOICES) {
      const audio: Int16Array[] = [];
      for (const text of SHIFT_SENTENCES) audio.push(await spoken(tts, voice, text));
      wide.push(await learntMean(audio.map((a) => padded(a, 16000))));
      tel.push(await learntMean(await Promise.all(audio.map(async (a) => padded(await through(a, 8000), 16000)))));
      log(`telephone mean: ${voice} learnt`);
    }
  } finally {
    await tts.close();
  }
  const avg = (means: number[][], i: number): number => means.reduce((sum, m) => sum + m[i]!, 0) / means.length;
  return TELEPHONE_BAND_CEPSTRAL_SHIFT.map((_, i) => avg(tel, i) - avg(wide, i));
}

/** The first answers of part 3: what a caller says, the node it says it at, and whether the text heard is right. */
const FLITE_ANSWERS: ReadonlyArray<{ text: string; node: SttExpectation; right: (heard: string) => boolean }> = [
  ...['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'].map((text, d) => ({ text, node: ONE_DIGIT_NODE, right: (t: string) => digitsOf(t) === String(d) })),
  ...COMMANDS.map((text) => ({ text, node: COMMANDS_NODE, right: (t: string) => commandEdge(t) === text })),
  ...['four one five', 'seven two nine', 'eight eight three one'].map((text) => ({ text, node: DIGITS_NODE, right: (t: string) => digitsOf(t) === digitsOf(text) })),
];

/** Part 3's first answers: each its own phone call, at the node that expects it. */
async function fliteFirstAnswers(log: (line: string) => void): Promise<string[]> {
  const tts = new FliteTts();
  try {
    const audioOf = async (voice: string): Promise<Int16Array[]> => Promise.all(FLITE_ANSWERS.map(async (a) => padded(await down(await spoken(tts, voice, a.text)), 8000)));
    return await perVoice(log, 'Flite voice through the telephone band, first answers (10 digits at a one-digit node, 10 commands, 3 digit strings)', audioOf, async (stt, audio, voice) => {
      let right = 0;
      for (const [i, pcm] of audio.entries()) {
        const s = await openRecogniser(stt, 8000, {});
        s.expect?.(FLITE_ANSWERS[i]!.node);
        for (let o = 0; o < pcm.length; o += 160) s.write(pcm.subarray(o, o + 160));
        const text = (await s.finalize()).text;
        await s.close();
        if (FLITE_ANSWERS[i]!.right(text)) right++;
        else log(`telephone mean: ${voice} "${FLITE_ANSWERS[i]!.text}" heard "${text}"`);
      }
      return right;
    });
  } finally {
    await tts.close();
  }
}

/** 16 kHz audio at 8 kHz, as a phone call carries it. */
async function down(pcm: Int16Array): Promise<Int16Array> {
  const r = await createResampler(16000, 8000);
  try {
    return r.process(pcm);
  } finally {
    r.close();
  }
}

const pct = (ok: number, n: number): string => (n === 0 ? '-' : `${fmt((100 * ok) / n)} % (${ok}/${n})`);

/** Part 2's rows: per 8 kHz group and node, right with the telephone band's mean and with the model's. */
async function firstAnswers(log: (line: string) => void, perGroup: number): Promise<string[]> {
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return [`Real speech: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`];
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const of = (kind: Item['kind']): Item[] => manifest.filter((i) => i.kind === kind && i.rate === 8000).slice(0, perGroup);
  const spoken = (it: Item): string => it.digits ?? digitsOf(it.text);
  const rows: string[] = [];
  const row = async (name: string, items: readonly Item[], nodeOf: (it: Item) => SttExpectation, right: (text: string, it: Item) => boolean): Promise<void> => {
    if (items.length === 0) return;
    const cells: string[] = [];
    for (const telephoneBandMean of [true, false]) {
      // Items that share a node are decoded together (one pool per node, as throughCalls takes one).
      const texts = new Map<Item, string>();
      const byNode = new Map<string, Item[]>();
      for (const it of items) byNode.set(JSON.stringify(nodeOf(it)), [...(byNode.get(JSON.stringify(nodeOf(it))) ?? []), it]);
      for (const [node, sub] of byNode) {
        const h = await throughCalls(sub, JSON.parse(node) as SttExpectation, [], { telephoneBandMean });
        sub.forEach((it, i) => texts.set(it, h.texts[i]!));
      }
      cells.push(pct(items.filter((it) => right(texts.get(it)!, it)).length, items.length));
    }
    rows.push(`| ${name} | ${cells.join(' | ')} |`);
    log(`telephone mean: ${name}: ours ${cells[0]}, model's ${cells[1]}`);
  };
  await row('commands, commands node', of('command'), () => COMMANDS_NODE, (t, it) => commandEdge(t) === it.text);
  await row('single digits, digits node', of('digit'), () => DIGITS_NODE, (t, it) => digitsOf(t) === spoken(it));
  await row('single digits, one-digit node (`max_digits` 1)', of('digit'), () => ONE_DIGIT_NODE, (t, it) => digitsOf(t) === spoken(it));
  await row('digit strings, digits node', of('digits'), () => DIGITS_NODE, (t, it) => digitsOf(t) === spoken(it));
  await row('digit strings, a node stating their length', of('digits'), (it) => ({ ...DIGITS_NODE, digitCount: { min: spoken(it).length, max: spoken(it).length } }), (t, it) => digitsOf(t) === spoken(it));
  await row('sentences at the commands node, a keyword edge taken (wrong)', of('sentence'), () => COMMANDS_NODE, (t) => commandEdge(t) !== 'else');
  return ['| 8 kHz group, each recording a call\'s first answer | telephone band\'s mean (ours) | model\'s -cmninit (baseline) |', '|---|---|---|', ...rows];
}

/** Part 3's later answers: each voice's phrases through the telephone band as one phone call, told each phrase's keywords. */
async function laterAnswers(log: (line: string) => void): Promise<string[]> {
  const corpus = await buildCorpus(FLITE_VOICES);
  return perVoice(log, "Flite voice, the recognition bench's phrases through the telephone band as one call (keyword branch right)", async (voice) => corpus.get(`${voice}/telephone`)!, async (stt, audio) => {
    let right = 0;
    const s = await stt.openStream({ sourceSampleRateHz: 8000 });
    for (const [i, pcm] of audio.entries()) {
      s.bias?.(CALLER_PHRASES[i]!.keywords);
      for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
      if (keywordMatch(CALLER_PHRASES[i]!.keywords, (await s.finalize()).text) === CALLER_PHRASES[i]!.branch) right++;
    }
    await s.close();
    return right;
  });
}

export async function runTelephoneMeanBench(options: { log?: (line: string) => void; perGroup?: number } = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const shift = await measuredShift(log);
  // c0, the level, is not shifted (pocketsphinx.stt.ts): compared from c1.
  const largest = Math.max(...shift.slice(1).map((v, i) => Math.abs(v - TELEPHONE_BAND_CEPSTRAL_SHIFT[i + 1]!)));
  return [
    machine(),
    '',
    `The shift measured now (c0..c12): ${shift.map((v) => fmt(v, 2)).join(', ')}; committed: ${TELEPHONE_BAND_CEPSTRAL_SHIFT.join(', ')} (c0 not shifted); largest difference in c1..c12 ${fmt(largest, 2)}.`,
    '',
    ...(await firstAnswers(log, options.perGroup ?? Infinity)),
    '',
    ...(await fliteFirstAnswers(log)),
    '',
    ...(await laterAnswers(log)),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await runTelephoneMeanBench({ log: (l) => console.error(l) }));
