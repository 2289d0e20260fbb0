/**
 * Noise suppression benchmark, `npm run bench -- denoise` (issue 25): recordings of real people
 * from the shared real-speech folder (REAL_SPEECH_DIR; read in place, never copied; said plainly
 * when absent), with noise mixed in at 10 and 5 dB SNR, recognised with and without RNNoise
 * (the agent's `denoising_mode`), in the same run:
 *   - babble: four Flite voices saying different sentences at once, looped;
 *   - pink noise from sox (`sox -n ... synth pinknoise`).
 * The SNR is over the whole padded item (speech power over noise power). Items: the first
 * DENOISE_COMMANDS commands at 16 kHz, scored by the keyword edge a commands node takes (decoded
 * as a call decodes a closed node: the stream told the node's expectation), and the first
 * DENOISE_SENTENCES sentences at 16 kHz, scored by word error rate (the open language model).
 * Each condition runs one suppressor and one recogniser stream over its items in order, as one
 * call would. Cost: CPU per second of audio of the suppressor, against the Speex resampling
 * alone (the 16k -> 48k -> 16k it includes) measured in the same run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNoiseSuppressor } from '../src/providers/audio/rnnoise.ts';
import { createResampler } from '../src/providers/audio/resample.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { SttExpectation } from '../src/providers/stt.ts';
import { fmt, wordErrors } from './lib.ts';
import { COMMANDS, type Item, commandEdge, padded, readWav, realSpeechDir } from './real-speech.ts';

const COMMANDS_NODE: SttExpectation = { closed: true, phrases: COMMANDS, values: [] };
const BABBLE_LINES = [
  'The meeting moved to Thursday afternoon because the room was booked.',
  'I think the train will be late again this evening, it usually is.',
  'Could you pass me the report from last quarter when you have a minute.',
  'We should order more paper before the end of the month.',
];
const BABBLE_VOICES = ['flite-kal16', 'flite-slt', 'flite-rms', 'flite-awb'];

function power(pcm: Int16Array): number {
  let e = 0;
  for (const v of pcm) e += v * v;
  return e / Math.max(1, pcm.length);
}

/** `speech` with `noise` (looped from `at`) mixed in at `snrDb`, clipped to 16 bits. */
function mix(speech: Int16Array, noise: Int16Array, snrDb: number, at: number): Int16Array {
  let np = 0;
  for (let i = 0; i < speech.length; i++) np += noise[(at + i) % noise.length]! ** 2;
  np /= speech.length;
  const gain = Math.sqrt(power(speech) / (np * 10 ** (snrDb / 10)));
  const out = new Int16Array(speech.length);
  for (let i = 0; i < speech.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(speech[i]! + gain * noise[(at + i) % noise.length]!)));
  return out;
}

async function babble(): Promise<Int16Array> {
  const tts = new FliteTts();
  try {
    const talkers: Int16Array[] = [];
    for (const [i, line] of BABBLE_LINES.entries()) {
      const parts: Int16Array[] = [];
      for await (const c of tts.synthesize(`${line} ${line}`, { voiceId: BABBLE_VOICES[i]! })) parts.push(c);
      const n = parts.reduce((a, p) => a + p.length, 0);
      const pcm = new Int16Array(n);
      let o = 0;
      for (const p of parts) (pcm.set(p, o), (o += p.length));
      talkers.push(pcm);
    }
    const length = Math.min(...talkers.map((t) => t.length));
    const out = new Int16Array(length);
    // Each talker starts at another place in its speech, so their pauses do not line up.
    for (let i = 0; i < length; i++) out[i] = Math.round(talkers.reduce((a, t, k) => a + t[(i + Math.floor((k * t.length) / 4)) % t.length]!, 0) / 2);
    return out;
  } finally {
    await tts.close();
  }
}

function pinkNoise(seconds: number): Int16Array | string {
  const r = spawnSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', '-e', 'signed-integer', '-t', 'raw', '-', 'synth', String(seconds), 'pinknoise', 'vol', '0.3'], { maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) return `sox failed (${r.error?.message ?? r.stderr.toString().trim()}): apt-get install sox`;
  const b = r.stdout;
  return new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length - (b.length % 2)));
}

/** Runs each item through a fresh call's suppressor (one for the condition), in 20 ms frames; CPU ms spent. */
async function denoiseAll(items: Int16Array[]): Promise<{ out: Int16Array[]; cpuMs: number }> {
  const s = await createNoiseSuppressor();
  const out: Int16Array[] = [];
  const c0 = process.cpuUsage();
  for (const pcm of items) {
    const clean = new Int16Array(pcm.length);
    for (let o = 0; o + 320 <= pcm.length; o += 320) clean.set(s.process(pcm.subarray(o, o + 320)), o);
    out.push(clean);
  }
  const c = process.cpuUsage(c0);
  s.close();
  return { out, cpuMs: (c.user + c.system) / 1000 };
}

async function resampleAll(items: Int16Array[]): Promise<number> {
  const up = await createResampler(16000, 48000);
  const down = await createResampler(48000, 16000);
  const c0 = process.cpuUsage();
  for (const pcm of items) for (let o = 0; o + 320 <= pcm.length; o += 320) down.process(up.process(pcm.subarray(o, o + 320)));
  const c = process.cpuUsage(c0);
  up.close();
  down.close();
  return (c.user + c.system) / 1000;
}

async function recognise(stt: PocketsphinxStt, items: Int16Array[], expectation: SttExpectation | undefined): Promise<string[]> {
  const s = await stt.openStream({});
  const out: string[] = [];
  try {
    if (expectation) s.expect?.(expectation);
    for (const pcm of items) {
      for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
      out.push((await s.finalize()).text);
    }
  } finally {
    await s.close();
  }
  return out;
}

export interface DenoiseBenchOptions {
  log?: (line: string) => void;
}

export async function runDenoiseBench(options: DenoiseBenchOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return `Noise suppression: not run, the real-speech folder ${dir} is absent (set REAL_SPEECH_DIR).`;
  const pink = pinkNoise(60);
  if (typeof pink === 'string') return `Noise suppression: not run, ${pink}.`;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const nCommands = Number(process.env['DENOISE_COMMANDS'] ?? 20);
  const nSentences = Number(process.env['DENOISE_SENTENCES'] ?? 5);
  const commands = manifest.filter((i) => i.kind === 'command' && i.rate === 16000).slice(0, nCommands);
  const sentences = manifest.filter((i) => i.kind === 'sentence' && i.rate === 16000).slice(0, nSentences);
  const load = (items: Item[]) => items.map((it) => padded(readWav(join(dir, it.file)), 16000));
  const audio = { commands: load(commands), sentences: load(sentences) };
  const noises = { babble: await babble(), pink };
  const conditions: Array<{ name: string; noise?: Int16Array; snr?: number }> = [
    { name: 'clean' },
    { name: 'babble, 10 dB', noise: noises.babble, snr: 10 },
    { name: 'babble, 5 dB', noise: noises.babble, snr: 5 },
    { name: 'pink, 10 dB', noise: noises.pink, snr: 10 },
    { name: 'pink, 5 dB', noise: noises.pink, snr: 5 },
  ];
  // One recogniser (its decoders loaded once) for every stream of the run.
  const stt = new PocketsphinxStt({ mode: 'library' });
  try {
    return await measure(stt, conditions, commands, sentences, audio, dir, log);
  } finally {
    await stt.close();
  }
}

async function measure(
  stt: PocketsphinxStt,
  conditions: Array<{ name: string; noise?: Int16Array; snr?: number }>,
  commands: Item[],
  sentences: Item[],
  audio: { commands: Int16Array[]; sentences: Int16Array[] },
  dir: string,
  log: (line: string) => void,
): Promise<string> {
  const rows: string[] = [];
  let cpuMs = 0;
  let resampleMs = 0;
  let audioMs = 0;
  for (const c of conditions) {
    const noisy = (items: Int16Array[]) => (c.noise ? items.map((pcm, i) => mix(pcm, c.noise!, c.snr!, i * 7919)) : items);
    const cmd = noisy(audio.commands);
    const sen = noisy(audio.sentences);
    const dc = await denoiseAll(cmd);
    const ds = await denoiseAll(sen);
    cpuMs += dc.cpuMs + ds.cpuMs;
    resampleMs += (await resampleAll(cmd)) + (await resampleAll(sen));
    audioMs += [...cmd, ...sen].reduce((a, p) => a + p.length / 16, 0);
    const right = (texts: string[]) => commands.filter((it, i) => commandEdge(texts[i]!) === it.text).length;
    const wer = (texts: string[]) => {
      const e = sentences.reduce((acc, it, i) => {
        const w = wordErrors(it.text, texts[i]!);
        return { errors: acc.errors + w.errors, words: acc.words + w.words };
      }, { errors: 0, words: 0 });
      return (100 * e.errors) / Math.max(1, e.words);
    };
    const [rawCmd, denCmd, rawSen, denSen] = [
      right(await recognise(stt, cmd, COMMANDS_NODE)),
      right(await recognise(stt, dc.out, COMMANDS_NODE)),
      wer(await recognise(stt, sen, undefined)),
      wer(await recognise(stt, ds.out, undefined)),
    ];
    const n = commands.length;
    rows.push(`| ${c.name} | ${fmt((100 * rawCmd) / n)} % (${rawCmd}/${n}) | ${fmt((100 * denCmd) / n)} % (${denCmd}/${n}) | ${fmt(rawSen)} % | ${fmt(denSen)} % |`);
    log(`denoise: ${c.name}: commands ${rawCmd} -> ${denCmd} of ${n}; sentences WER ${fmt(rawSen)} -> ${fmt(denSen)} %`);
  }
  const perSecond = (ms: number) => (ms / audioMs) * 1000;
  return [
    `Noise suppression (RNNoise, 16k -> 48k -> 16k), real speech from ${dir.replace(/\/$/, '').split('/').slice(-3).join('/')}: ${commands.length} commands (16 kHz, decoded at a commands node) and ${sentences.length} sentences (16 kHz, open model), PocketSphinx library mode:`,
    '',
    '| condition | commands right, no-denoise | commands right, noise-cancellation | sentences WER, no-denoise | sentences WER, noise-cancellation |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `CPU of the suppressor: ${fmt(perSecond(cpuMs))} ms per second of audio (${fmt(perSecond(cpuMs) / 10)} % of one core per call), of which the Speex resampling alone, measured in the same run, is ${fmt(perSecond(resampleMs))} ms (ratio ${fmt(cpuMs / Math.max(1e-9, resampleMs), 2)}).`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await runDenoiseBench({ log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
