/**
 * First-utterance benchmark (`npm run bench -- first-utterance`): each of the recognition bench's
 * caller phrases (bench/recognition.ts, CALLER_PHRASES) spoken by the Flite voices as the first
 * words of a call: one stream per phrase, so the decoder starts on the model's cepstral mean as
 * loaded, not one learnt from the caller's earlier turns (what an agent test in audio mode and a
 * real caller's first answer get; the recognition bench decodes a voice's ten phrases as one call,
 * so only its first phrase is a first utterance). Two nodes:
 *   - bias: the node branches on the phrase's own keywords (the recognition bench's "with bias");
 *   - closed: one closed node with every phrase's keywords as its edges (bench/agent-tests.ts's
 *     flow), directed recognition.
 * Each runs with the first utterance decoded again on the mean learnt from it (the recogniser's
 * default, decoder.worker.ts decodeOnLearntMean) and, the baseline in the same run, without.
 * Figures: the keyword branch taken (the flow's keywordMatch; right when taken exactly when a
 * keyword was said, and, at the closed node, no other node's keyword), the word error rate, and
 * the decoder's CPU per second of audio. FIRST_VOICES and FIRST_BANDS (comma-separated) narrow or
 * widen the set; default every voice, wideband and telephone band (FIRST_VOICES= : none).
 * Then the real-speech set (bench/real-speech.ts; skipped when absent), each recording the first
 * utterance of its own stream, directed as a call's flow node would be: commands at the commands
 * node (the edge spoken taken), single digits and digit strings at a digits node (the string read),
 * and the sentences at the commands node (a keyword edge taken: a false accept); 8 kHz items as a
 * call gives them to PocketSphinx (a 16 kHz copy). PER_GROUP=n: at most n items per group.
 */
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { DecoderPool } from '../src/providers/pocketsphinx/decoder-pool.ts';
import type { SttExpectation } from '../src/providers/stt.ts';
import { keywordMatch } from '../src/voice/engines/flow.engine.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, machine, wordErrors } from './lib.ts';
import { BANDS, CALLER_PHRASES, VOICES, buildCorpus } from './recognition.ts';
import { COMMANDS_NODE, DIGITS_NODE, type Item, commandEdge, digitsOf, realSpeechDir, throughCalls } from './real-speech.ts';

const ALL_KEYWORDS = [...new Set(CALLER_PHRASES.flatMap((p) => p.keywords))];
const GROUPS = [...new Map(CALLER_PHRASES.map((p) => [p.keywords.join(' '), p.keywords])).values()];

type Node = 'bias' | 'closed';

interface Tally {
  right: number;
  utterances: number;
  errors: number;
  words: number;
  cpuS: number;
  audioS: number;
  missed: string[];
}

/** The branch the closed node takes on `text`: the first group whose keyword it holds, or -1 (stays). */
function branchOf(text: string): number {
  return GROUPS.findIndex((keywords) => keywordMatch(keywords, text));
}

/** The branch the closed node should take for phrase `p`. */
function expectedBranch(p: (typeof CALLER_PHRASES)[number]): number {
  return p.branch ? GROUPS.findIndex((keywords) => keywords.join(' ') === p.keywords.join(' ')) : -1;
}

async function cpuS(pool: DecoderPool): Promise<number> {
  const keep = setInterval(() => {}, 1000);
  const used = await Promise.all(pool.threads.map((t) => t.worker.cpuUsage())).finally(() => clearInterval(keep));
  return used.reduce((sum, u) => sum + (u.user + u.system) / 1e6, 0);
}

/** Every phrase of `corpus` as a call's first utterance, at `node`, one decoder thread. */
async function firstUtterances(corpus: Map<string, Int16Array[]>, node: Node, redecode: boolean): Promise<Tally> {
  const pool = new DecoderPool({ warm: 0, maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders: pool, redecodeFirstUtterance: redecode });
  const out: Tally = { right: 0, utterances: 0, errors: 0, words: 0, cpuS: 0, audioS: 0, missed: [] };
  const closed: SttExpectation = { closed: true, phrases: ALL_KEYWORDS, values: [] };
  try {
    // The model loads outside the measured CPU: a first stream decodes silence.
    const warm = await stt.openStream();
    warm.write(new Int16Array(8000));
    await warm.finalize();
    await warm.close();
    const cpuBefore = await cpuS(pool);
    for (const [name, audio] of corpus) {
      for (const [i, pcm] of audio.entries()) {
        const p = CALLER_PHRASES[i]!;
        const s = await stt.openStream();
        try {
          if (node === 'bias') s.bias?.(p.keywords);
          else s.expect?.(closed);
          for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
          const { text } = await s.finalize();
          const e = wordErrors(p.text, text);
          out.errors += e.errors;
          out.words += e.words;
          out.utterances++;
          out.audioS += pcm.length / 16000;
          const right = node === 'bias' ? keywordMatch(p.keywords, text) === p.branch : branchOf(text) === expectedBranch(p);
          if (right) out.right++;
          else out.missed.push(`${name}: "${p.text}" heard "${text}"`);
        } finally {
          await s.close();
        }
      }
    }
    out.cpuS = (await cpuS(pool)) - cpuBefore;
  } finally {
    await stt.close();
    await pool.close();
  }
  return out;
}

/** The real-speech rows: per group, right (or, for sentences, keyword edges taken) with and without the second decode. */
async function realSpeechRows(log: (line: string) => void): Promise<string[]> {
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return [`Real speech: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`];
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const perGroup = process.env['PER_GROUP'] ? Number(process.env['PER_GROUP']) : Infinity;
  const rows: string[] = [];
  const kinds: ReadonlyArray<[Item['kind'], string]> = [['command', 'commands'], ['digit', 'single digits'], ['digits', 'digit strings'], ['sentence', 'sentences at the commands node, a keyword edge taken (wrong)']];
  for (const [kind, label] of kinds) {
    for (const rate of [16000, 8000] as const) {
      const items = manifest.filter((i) => i.kind === kind && i.rate === rate).slice(0, perGroup);
      if (items.length === 0) continue;
      const at = kind === 'digit' || kind === 'digits' ? DIGITS_NODE : COMMANDS_NODE;
      const score = (texts: readonly string[]): number =>
        items.filter((it, i) => {
          const t = texts[i]!;
          if (kind === 'sentence') return commandEdge(t) !== 'else';
          if (kind === 'command') return commandEdge(t) === it.text;
          return digitsOf(t) === (it.digits ?? digitsOf(it.text));
        }).length;
      const base = (await throughCalls(items, at, [], { redecodeFirstUtterance: false })).texts;
      const ours = (await throughCalls(items, at, [], { redecodeFirstUtterance: true })).texts;
      const name = `${label}, ${rate === 16000 ? '16 kHz' : 'telephone band'}`;
      items.forEach((it, i) => {
        if (base[i] !== ours[i]) log(`  ${name}: "${it.text}": without "${base[i]}", with "${ours[i]}"`);
      });
      const cell = (n: number) => `${fmt((100 * n) / items.length)} % (${n}/${items.length})`;
      log(`real speech, first utterances: ${name}: with ${score(ours)}/${items.length}, without ${score(base)}/${items.length}`);
      rows.push(`| ${name} | ${cell(score(ours))} | ${cell(score(base))} |`);
    }
  }
  return ['Real speech, each recording the first utterance of its own stream (directed):', '', '| group | second decode (ours) | without (baseline) |', '|---|---|---|', ...rows];
}

export async function runFirstUtteranceBench(options: { log: (line: string) => void }): Promise<string> {
  const voices = process.env['FIRST_VOICES']?.split(',').filter(Boolean) ?? [...VOICES];
  const bands = process.env['FIRST_BANDS']?.split(',') ?? ['wide', 'telephone'];
  for (const b of bands) if (!(BANDS as readonly string[]).includes(b)) throw new Error(`FIRST_BANDS: unknown band ${b} (${BANDS.join(', ')})`);
  const built = await buildCorpus(voices);
  const corpus = new Map([...built].filter(([k]) => bands.includes(k.split('/')[1]!)));
  const rows: string[] = [];
  for (const node of voices.length > 0 ? (['bias', 'closed'] as const) : []) {
    const base = await firstUtterances(corpus, node, false);
    const ours = await firstUtterances(corpus, node, true);
    for (const [label, t] of [['without', base], ['with', ours]] as const) {
      options.log(`${node} node, ${label} the second decode: ${t.right}/${t.utterances} branches right, WER ${fmt((100 * t.errors) / t.words)} %, ${fmt(t.cpuS / t.audioS, 3)} core-s per s of audio`);
      for (const m of t.missed) options.log(`  missed: ${m}`);
    }
    const what = node === 'bias' ? "the phrase's keywords (bias)" : 'every keyword, closed (directed)';
    rows.push(`| ${what} | ${ours.right}/${ours.utterances} | ${base.right}/${base.utterances} | ${fmt((100 * ours.errors) / ours.words)} % | ${fmt((100 * base.errors) / base.words)} % | ${fmt(ours.cpuS / ours.audioS, 3)} / ${fmt(base.cpuS / base.audioS, 3)} |`);
  }
  return [
    machine(),
    `Voices ${voices.join(', ')}; bands ${bands.join(', ')}; each phrase the first utterance of its own stream.`,
    '',
    '| node | branches right, second decode (ours) | without (baseline) | WER, ours | WER, baseline | decoder CPU per s of audio, ours / baseline |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    ...(await realSpeechRows(options.log)),
  ].join('\n');
}
