/**
 * The embedded recogniser's cost (`npm run bench -- decoder-cost`): the decoder thread's CPU per
 * second of audio (its own rusage, user + system, the model's load excluded), in one run:
 *   - at an open node (the language model, the node's words as bias) and at a closed node
 *     (directed: the grammar's decode and the open model's check), over real speech: 15 commands
 *     and the 8 sentences of the real-speech set (16 kHz; REAL_SPEECH_DIR, see bench/real-speech.ts);
 *   - what a call's end of turn costs: the same commands followed by the silence a call wrote
 *     before SpeechFeed (pre-roll 200 ms, the 800 ms end of turn) against what it writes now
 *     (300 ms), with low line noise (as a phone line has: PocketSphinx's own speech detector
 *     drops digital silence but decodes noise), and the commands heard right in each;
 *   - Flite's synthesis, per second of speech made (what an audio-mode test case adds);
 * and from those, the cores 24 embedded calls and 8 audio-mode test cases at 3x real time need.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { DecoderPool } from '../src/providers/pocketsphinx/decoder-pool.ts';
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { TRAILING_SILENCE_MS } from '../src/voice/stages/speech-feed.ts';
import { fmt, machine } from './lib.ts';
import { COMMANDS, commandEdge, padded, readWav, realSpeechDir, type Item } from './real-speech.ts';

/** Low line noise: uniform, ±30 (about -60 dBFS), seeded so every run decodes the same audio. */
function noise(ms: number, seed: number): Int16Array {
  const out = new Int16Array(ms * 16);
  let x = seed;
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out[i] = Math.round((x / 2147483648) * 60 - 30);
  }
  return out;
}

interface Decoded {
  cpuS: number;
  audioS: number;
  texts: string[];
}

/** One stream, the clips in order, as fast as decoded; the decoder thread's CPU over them. */
async function decode(clips: readonly Int16Array[], way: 'open' | 'directed'): Promise<Decoded> {
  const pool = new DecoderPool({ maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool });
  const s = await stt.openStream();
  const keep = setInterval(() => {}, 1000); // idle decoder threads do not hold the process open
  const cpu = async (): Promise<number> => (await Promise.all(pool.threads.map((t) => t.worker.cpuUsage()))).reduce((a, u) => a + (u.user + u.system) / 1e6, 0);
  try {
    s.write(new Int16Array(8000));
    await s.finalize();
    const loaded = await cpu();
    const texts: string[] = [];
    let samples = 0;
    for (const pcm of clips) {
      if (way === 'directed') s.expect?.({ closed: true, values: [], phrases: COMMANDS });
      else s.bias?.(COMMANDS);
      for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
      samples += pcm.length;
      texts.push((await s.finalize()).text);
    }
    return { cpuS: (await cpu()) - loaded, audioS: samples / 16000, texts };
  } finally {
    clearInterval(keep);
    await s.close();
    await pool.close();
  }
}

/** Flite kal16's synthesis of a case's phrases: the process's CPU (all threads) and the speech made, s. */
async function fliteCost(): Promise<{ fliteCpuS: number; fliteS: number }> {
  const tts = new FliteTts();
  try {
    for await (const _ of tts.synthesize('Warm up.', { voiceId: 'flite-kal16' }));
    const c0 = process.cpuUsage();
    let fliteS = 0;
    for (const text of ['Hello. How can I help?', 'i would like to book an appointment', 'Thank you. Goodbye.', 'there is a problem with my invoice']) {
      for await (const chunk of tts.synthesize(text, { voiceId: 'flite-kal16' })) fliteS += chunk.length / 16000;
    }
    const c = process.cpuUsage(c0);
    return { fliteCpuS: (c.user + c.system) / 1e6, fliteS };
  } finally {
    await tts.close();
  }
}

export async function runDecoderCostBench(options: { log: (line: string) => void }): Promise<string> {
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return `Decoder cost: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const commands = manifest.filter((i) => i.kind === 'command' && i.rate === 16000).slice(0, 15);
  const sentences = manifest.filter((i) => i.kind === 'sentence' && i.rate === 16000);
  const speech = [...commands, ...sentences].map((i) => padded(readWav(join(dir, i.file)), 16000));
  const perS = (d: Decoded): number => d.cpuS / d.audioS;
  const rows: string[] = [];

  const open = await decode(speech, 'open');
  options.log(`decoder cost: open ${fmt(perS(open), 3)} core-s/s`);
  const directed = await decode(speech, 'directed');
  options.log(`decoder cost: directed ${fmt(perS(directed), 3)} core-s/s`);
  rows.push(`| open node (language model + bias), real speech | ${fmt(open.audioS, 1)} s | ${fmt(perS(open), 3)} core-s/s | baseline |`);
  rows.push(`| closed node (directed: grammar decode + the open model's check) | ${fmt(directed.audioS, 1)} s | ${fmt(perS(directed), 3)} core-s/s | ${fmt(perS(directed) / perS(open), 2)} x the open node |`);

  // A call's utterance as written before SpeechFeed and now: pre-roll, speech, end-of-turn silence.
  const utterance = (trailingMs: number) => commands.map((i, k) => new Int16Array([...noise(200, k + 1), ...readWav(join(dir, i.file)), ...noise(trailingMs, k + 101)]));
  const before = await decode(utterance(800), 'open');
  const now = await decode(utterance(TRAILING_SILENCE_MS), 'open');
  const right = (d: Decoded): number => d.texts.filter((t, k) => commandEdge(t) === commands[k]!.text).length;
  options.log(`decoder cost: end of turn written whole ${fmt(before.cpuS, 2)} s, now ${fmt(now.cpuS, 2)} s`);
  rows.push(`| ${commands.length} commands, each with the 800 ms end of turn written whole (before) | ${fmt(before.audioS, 1)} s | ${fmt(before.cpuS / commands.length, 3)} core-s per utterance | ${right(before)}/${commands.length} right |`);
  rows.push(`| the same, ${TRAILING_SILENCE_MS} ms of it written (SpeechFeed, now) | ${fmt(now.audioS, 1)} s | ${fmt(now.cpuS / commands.length, 3)} core-s per utterance | ${right(now)}/${commands.length} right; ${fmt(now.cpuS / before.cpuS, 2)} x before |`);

  const { fliteCpuS, fliteS } = await fliteCost();
  rows.push(`| Flite kal16 synthesis (the process's CPU, all threads) | ${fmt(fliteS, 1)} s made | ${fmt(fliteCpuS / fliteS, 3)} core-s/s | ${fmt(fliteCpuS / fliteS / perS(open), 2)} x decoding |`);

  // What the targets need, from the measured cost: decoded audio per second of a call or case.
  const c = perS(directed);
  const callShare = 0.4; // embedded-scale: ~2 s utterances every ~6.5 s, with pre-roll and 300 ms of silence
  const caseAudioS = 3; // agent-tests: one ~2.5 s phrase per ~7.5 s case, with pre-roll and silence
  const caseCallS = 7.5;
  return [
    `${machine()}. PocketSphinx library mode, our decoder arguments.`,
    '',
    '| what | audio | CPU | against |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Cores needed at ${fmt(c, 3)} core-s/s (the closed node): 24 calls each decoding ~${callShare} s of audio a second: **${fmt(24 * callShare * c, 1)} cores**; ` +
      `8 audio-mode cases at 3x real time, each decoding ~${caseAudioS} s per ${caseCallS} s of call: **${fmt((8 * 3 * caseAudioS * c) / caseCallS, 1)} cores**. This machine has 2, shared.`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await runDecoderCostBench({ log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
