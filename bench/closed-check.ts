/**
 * Whether a closed node can check for out-of-grammar speech more cheaply than with the open
 * language model's search (`npm run bench -- closed-check`; issues 25 and 28: a closed node's
 * decoding costs what an open node's does because of that search). In one run, on one
 * PocketSphinx decoder with our arguments (16 kHz; 8 kHz items as the 16 kHz copy a call gives
 * the directed path):
 *   1. The CPU per second of audio (this thread's own rusage, the model's load excluded) of
 *      (a) the grammar search alone (the commands node's JSGF; for the Flite phrases, their
 *      keywords'), (b) a phone loop of the model's phones (ps_set_allphone with no phone language
 *      model: context-independent phones, and the context-dependent loop on a few items), (c) the
 *      language model's search. The gate: (a)+(b) under about 0.4 x (a)+(c).
 *   2. The classic confidence measure for grammar recognition, at the commands node over every
 *      real-speech item: the acoustic log-likelihood ratio per frame of the grammar's keyword
 *      against the phone loop over the keyword's frames, and the keyword's share of the speech the
 *      phone loop heard. Thresholds are chosen on the development half (even items of each group:
 *      no out-of-grammar item accepted, most right answers minus wrong ones) and judged on the
 *      other half: how many closed turns could skip the language model, and the false accepts.
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEBIAN_MODEL_DIR } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { directedGrammar } from '../src/providers/pocketsphinx/directed.ts';
import { fmt, machine } from './lib.ts';
import { buildCorpus, CALLER_PHRASES } from './recognition.ts';
import { COMMANDS, padded, readWav, realSpeechDir, to16k, type Item } from './real-speech.ts';

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
}

/** One segment of a search's best path: its word (or phone), acoustic score, frames from the path's first. */
interface Segment {
  word: string;
  ascr: number;
  start: number;
  end: number;
}

/** One PocketSphinx decoder (libpocketsphinx through koffi, as decoder.worker.ts calls it) with named searches. */
function openDecoder() {
  const koffi = createRequire(import.meta.url)('koffi') as Koffi;
  const sb = koffi.load('libsphinxbase.so.3');
  const ps = koffi.load('libpocketsphinx.so.3');
  const f = {
    psArgs: ps.func('void *ps_args(void)'),
    parse: sb.func('void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)'),
    init: ps.func('void *ps_init(void *config)'),
    config: ps.func('void *ps_get_config(void *ps)'),
    setInt: sb.func('void cmd_ln_set_int_r(void *config, const char *name, long value)'),
    start: ps.func('int ps_start_utt(void *ps)'),
    end: ps.func('int ps_end_utt(void *ps)'),
    process: ps.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)'),
    hyp: ps.func('const char *ps_get_hyp(void *ps, _Out_ int32_t *score)'),
    segIter: ps.func('void *ps_seg_iter(void *ps)'),
    segNext: ps.func('void *ps_seg_next(void *seg)'),
    segWord: ps.func('const char *ps_seg_word(void *seg)'),
    segFrames: ps.func('void ps_seg_frames(void *seg, _Out_ int *sf, _Out_ int *ef)'),
    segProb: ps.func('int32_t ps_seg_prob(void *seg, _Out_ int32_t *ascr, _Out_ int32_t *lscr, _Out_ int32_t *lback)'),
    setJsgf: ps.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)'),
    setAllphone: ps.func('int ps_set_allphone(void *ps, const char *name, void *lm)'),
    setSearch: ps.func('int ps_set_search(void *ps, const char *name)'),
    free: ps.func('int ps_free(void *ps)'),
  };
  const m = DEBIAN_MODEL_DIR;
  const args = ['-hmm', join(m, 'en-us'), '-lm', join(m, 'en-us.lm.bin'), '-dict', join(m, 'cmudict-en-us.dict'), '-fwdflat', 'no', '-logfn', '/dev/null'];
  const ps0 = f.init(f.parse(null, f.psArgs(), args.length, args, 1));
  if (!ps0) throw new Error('the decoder could not load its model');
  const cpuS = (): number => {
    const u = process.threadCpuUsage();
    return (u.user + u.system) / 1e6;
  };
  return {
    /** A phone loop of the model's phones, context-independent or not (-allphone_ci, read when the search is made). */
    addPhoneLoop(name: string, contextIndependent: boolean): void {
      f.setInt(f.config(ps0), '-allphone_ci', contextIndependent ? 1 : 0);
      if ((f.setAllphone(ps0, name, null) as number) < 0) throw new Error(`ps_set_allphone ${name} failed`);
    },
    addGrammar(name: string, jsgf: string): void {
      if ((f.setJsgf(ps0, name, jsgf) as number) < 0) throw new Error(`ps_set_jsgf_string ${name} failed`);
    },
    /** Decodes `pcm` (16 kHz) with search `name`: the text, the best path's segments, the CPU spent. */
    decode(name: string, pcm: Int16Array): { text: string; segments: Segment[]; cpuS: number } {
      if ((f.setSearch(ps0, name) as number) < 0) throw new Error(`ps_set_search ${name} failed`);
      const c0 = cpuS();
      f.start(ps0);
      for (let o = 0; o < pcm.length; o += 320) f.process(ps0, pcm.subarray(o, o + 320), Math.min(320, pcm.length - o), 0, 0);
      f.end(ps0);
      const spent = cpuS() - c0;
      const text = ((f.hyp(ps0, [0]) as string | null) ?? '').replace(/\(\d+\)/g, '').trim();
      const segments: Segment[] = [];
      // Searches count frames from different origins (the stream's or the utterance's): each path from its first segment.
      let origin: number | undefined;
      for (let s = f.segIter(ps0); s; s = f.segNext(s)) {
        const ascr = [0];
        const sf = [0];
        const ef = [0];
        f.segProb(s, ascr, [0], [0]);
        f.segFrames(s, sf, ef);
        origin ??= sf[0]!;
        segments.push({ word: f.segWord(s) as string, ascr: ascr[0]!, start: sf[0]! - origin, end: ef[0]! - origin });
      }
      return { text, segments, cpuS: spent };
    },
    close(): void {
      f.free(ps0);
    },
  };
}

type Decoder = ReturnType<typeof openDecoder>;
const OPEN = '_default';

/** CPU per second of audio of each search over `clips`. */
function costs(d: Decoder, clips: readonly Int16Array[], searches: readonly string[]): Map<string, number> {
  const audioS = clips.reduce((s, c) => s + c.length, 0) / 16000;
  const out = new Map<string, number>();
  for (const name of searches) out.set(name, clips.reduce((s, c) => s + d.decode(name, c).cpuS, 0) / audioS);
  return out;
}

const isWord = (w: string): boolean => !w.startsWith('<') && !w.startsWith('[') && !w.startsWith('+') && w !== '(NULL)';

/** The confidence of a grammar answer against the phone loop over the same audio. */
interface Confidence {
  group: string;
  /** Index within its group: even items are the development half. */
  index: number;
  inGrammar: boolean;
  right: boolean;
  answer: string;
  /** Log-likelihood ratio per frame of the answer's words against the phone loop over their frames (logmath units). */
  llr: number;
  /** The answer's frames over the frames the phone loop heard as speech (not silence or filler). */
  share: number;
}

function confidence(d: Decoder, grammar: string, pcm: Int16Array): Pick<Confidence, 'answer' | 'llr' | 'share'> {
  const g = d.decode(grammar, pcm);
  const p = d.decode('phones-ci', pcm);
  const words = g.segments.filter((s) => isWord(s.word));
  const frames = words.reduce((n, s) => n + s.end - s.start + 1, 0);
  // The phone loop's score over the words' frames: each phone's score spread evenly over its frames.
  let phones = 0;
  for (const ph of p.segments) {
    for (const w of words) {
      const overlap = Math.min(ph.end, w.end) - Math.max(ph.start, w.start) + 1;
      if (overlap > 0) phones += (ph.ascr * overlap) / (ph.end - ph.start + 1);
    }
  }
  const speech = p.segments.filter((s) => s.word !== 'SIL' && !s.word.startsWith('+')).reduce((n, s) => n + s.end - s.start + 1, 0);
  return { answer: g.text, llr: frames > 0 ? (words.reduce((a, s) => a + s.ascr, 0) - phones) / frames : -Infinity, share: frames / Math.max(1, speech) };
}

export async function runClosedCheckBench(options: { log: (line: string) => void }): Promise<string> {
  const dir = realSpeechDir();
  if (!existsSync(join(dir, 'manifest.json'))) return `Closed check: not run, the folder ${dir} is absent (set REAL_SPEECH_DIR).`;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Item[];
  const d = openDecoder();
  try {
    const commandsJsgf = directedGrammar({ closed: true, phrases: COMMANDS, values: [] })!.jsgf;
    d.addGrammar('commands', commandsJsgf);
    const keywords = [...new Set(CALLER_PHRASES.flatMap((p) => p.keywords))];
    d.addGrammar('keywords', directedGrammar({ closed: true, phrases: keywords, values: [] })!.jsgf);
    d.addPhoneLoop('phones-ci', true);
    d.addPhoneLoop('phones-cd', false);

    // 1. Cost: the real-speech commands and sentences at 16 kHz, and the Flite caller phrases.
    const real = manifest.filter((i) => (i.kind === 'command' || i.kind === 'sentence') && i.rate === 16000).map((i) => padded(readWav(join(dir, i.file)), 16000));
    const corpus = await buildCorpus(['kal16', 'slt']);
    const flite = [...corpus.get('kal16/wide')!, ...corpus.get('slt/wide')!];
    d.decode(OPEN, real[0]!); // the first decode's one-off work is not the searches' cost
    const rows: string[] = [];
    for (const [what, clips, grammar] of [
      [`real speech: ${real.length} commands and sentences, 16 kHz`, real, 'commands'],
      [`Flite kal16 and slt: the ${flite.length} caller phrases (keywords' grammar)`, flite, 'keywords'],
    ] as const) {
      options.log(`closed check: cost over ${what}`);
      const c = costs(d, clips, [grammar, 'phones-ci', OPEN]);
      // The context-dependent loop is slow: a fifth of the items gives its cost.
      const cd = costs(d, clips.filter((_, k) => k % 5 === 0), ['phones-cd']).get('phones-cd')!;
      const a = c.get(grammar)!;
      const ci = c.get('phones-ci')!;
      const lm = c.get(OPEN)!;
      const audioS = clips.reduce((s, x) => s + x.length, 0) / 16000;
      rows.push(`| ${what} | ${fmt(audioS, 1)} s | ${fmt(a, 4)} | ${fmt(ci, 4)} | ${fmt(cd, 3)} | ${fmt(lm, 3)} | **${fmt((a + ci) / (a + lm), 2)}** | ${fmt((a + cd) / (a + lm), 2)} |`);
    }

    // 2. The confidence measure at the commands node, every real-speech item.
    options.log('closed check: confidence at the commands node');
    const scored: Confidence[] = [];
    const seen = new Map<string, number>();
    for (const item of manifest) {
      const group = `${item.kind}, ${item.rate === 16000 ? '16 kHz' : '8 kHz'}`;
      const index = seen.get(group) ?? 0;
      seen.set(group, index + 1);
      const pcm = padded(await to16k(readWav(join(dir, item.file)), item.rate), 16000);
      const c = confidence(d, 'commands', pcm);
      const inGrammar = item.kind === 'command';
      scored.push({ group, index, inGrammar, right: inGrammar && c.answer === item.text, ...c });
    }
    const dev = scored.filter((s) => s.index % 2 === 0);
    const accepted = (s: Confidence, llr: number, share: number): boolean => s.answer !== '' && s.llr >= llr && s.share >= share;
    let chosen = { llr: Infinity, share: 0, score: -1 };
    for (let llr = -10; llr <= 15; llr += 0.5) {
      for (let share = 0; share < 1; share += 0.05) {
        const taken = dev.filter((s) => accepted(s, llr, share));
        if (taken.some((s) => !s.inGrammar)) continue;
        const score = taken.filter((s) => s.right).length - taken.filter((s) => !s.right).length;
        if (score > chosen.score) chosen = { llr, share, score };
      }
    }
    const half = (name: string, part: readonly Confidence[]): string => {
      const taken = part.filter((s) => accepted(s, chosen.llr, chosen.share));
      const inGrammar = part.filter((s) => s.inGrammar).length;
      const taking = taken.filter((s) => s.inGrammar);
      const outside = part.filter((s) => !s.inGrammar).length;
      return `| ${name} | ${taking.length}/${inGrammar} (${fmt((100 * taking.length) / Math.max(1, inGrammar), 0)} %) | ${taking.filter((s) => s.right).length} right, ${taking.filter((s) => !s.right).length} wrong | **${taken.length - taking.length}/${outside}** |`;
    };
    const range = (xs: readonly Confidence[]): string => {
      const v = xs.map((s) => s.llr).filter(Number.isFinite).sort((x, y) => x - y);
      return v.length === 0 ? '-' : `${fmt(v[0]!, 1)} / ${fmt(v[Math.floor(v.length / 2)]!, 1)} / ${fmt(v.at(-1)!, 1)}`;
    };
    const groups = [...seen.keys()].map((g) => {
      const xs = scored.filter((s) => s.group === g);
      return xs[0]!.inGrammar
        ? `| ${g} (in grammar) right | ${range(xs.filter((s) => s.right))} |\n| ${g} (in grammar) wrong | ${range(xs.filter((s) => !s.right))} |`
        : `| ${g} (out of grammar) | ${range(xs)} |`;
    });
    return [
      `${machine()}. One PocketSphinx decoder, our arguments; CPU: this thread's rusage per second of audio.`,
      '',
      '| audio | length | (a) grammar | (b) phone loop, CI phones | (b) phone loop, CD phones (1 in 5 items) | (c) language model | (a+b CI) / (a+c) | (a+b CD) / (a+c) |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      'At the commands node, the grammar keyword\'s log-likelihood ratio per frame against the CI phone loop (min / median / max):',
      '',
      '| group | LLR per frame |',
      '|---|---|',
      ...groups,
      '',
      `Thresholds chosen on the development half (no out-of-grammar item taken): LLR ≥ ${fmt(chosen.llr, 1)}, share of the speech ≥ ${fmt(chosen.share, 2)}.`,
      '',
      '| half | closed turns that would skip the language model | their answers | out-of-grammar items taken (false accepts) |',
      '|---|---|---|---|',
      half('development (even items)', dev),
      half('test (odd items)', scored.filter((s) => s.index % 2 === 1)),
    ].join('\n');
  } finally {
    d.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await runClosedCheckBench({ log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
