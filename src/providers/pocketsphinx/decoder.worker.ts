// Worker thread that runs one PocketSphinx decoder in-process through libpocketsphinx (called with
// koffi, no headers or compiler needed), so decoding follows the caller's audio as it arrives and
// never blocks the event loop that paces the call's audio.
// Protocol, in order (one message at a time, so utterances never get out of step):
//   in  {type:'audio', pcm: Int16Array} | {type:'end', id} | {type:'bias', phrases} | {type:'close'}
//   out {type:'ready'} | {type:'interim', text} | {type:'progress', samples} | {type:'final', id, text}
//       | {type:'failed', message}
// 'progress' counts the samples decoded so far, so the parent can bound the audio queued for us.
// 'failed' is fatal (the decoder could not load or crashed); the parent fails every finalize.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

export interface DecoderWorkerData {
  /** Decoder arguments as on the command line: ['-hmm', dir, '-lm', file, ...]. */
  args: string[];
  /** Audio between two interim hypotheses, samples at 16 kHz. */
  interimEverySamples: number;
}

export type DecoderIn =
  | { type: 'audio'; pcm: Int16Array }
  | { type: 'end'; id: number }
  | { type: 'bias'; phrases: string[] }
  | { type: 'close' };

export type DecoderOut =
  | { type: 'ready' }
  | { type: 'interim'; text: string }
  | { type: 'progress'; samples: number }
  | { type: 'final'; id: number; text: string }
  | { type: 'failed'; message: string };

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
}

const port = parentPort;
if (!port) throw new Error('decoder.worker.ts runs as a worker thread');
const data = workerData as DecoderWorkerData;
const post = (m: DecoderOut): void => port.postMessage(m);

function load() {
  const koffi = createRequire(import.meta.url)('koffi') as Koffi;
  const sb = koffi.load('libsphinxbase.so.3');
  const ps = koffi.load('libpocketsphinx.so.3');
  return {
    psArgs: ps.func('void *ps_args(void)'),
    parse: sb.func('void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)'),
    init: ps.func('void *ps_init(void *config)'),
    start: ps.func('int ps_start_utt(void *ps)'),
    end: ps.func('int ps_end_utt(void *ps)'),
    process: ps.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)'),
    hyp: ps.func('const char *ps_get_hyp(void *ps, _Out_ int32_t *score)'),
    lookup: ps.func('const char *ps_lookup_word(void *ps, const char *word)'),
    setJsgf: ps.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)'),
    setSearch: ps.func('int ps_set_search(void *ps, const char *name)'),
    free: ps.func('int ps_free(void *ps)'),
  };
}

let api: ReturnType<typeof load>;
let decoder: unknown;
try {
  api = load();
  const config = api.parse(null, api.psArgs(), data.args.length, data.args, 1);
  if (!config) throw new Error('the decoder rejected its arguments');
  decoder = api.init(config);
  if (!decoder) throw new Error('the decoder could not load its model');
  post({ type: 'ready' });
} catch (e) {
  post({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
  port.close();
}

let inUtterance = false;
let decoded = 0;
/** Phrases for the next utterance (bias message) and for the one being decoded. */
let nextBias: string[] = [];
let bias: string[] = [];
/** The current utterance's audio, for the keyword check at its end (bounded by the parent's cut). */
let utterance: Int16Array[] = [];
/** The bias grammar loaded, by its phrases; '' when none. */
let grammarKey = '';

/**
 * Frequent words the keyword grammar may hear around the keywords, so that it does not force
 * every sound into a keyword.
 */
const FILLER = ('a an the i you we it is are was to of and in for on with my me your at this that be have do can would '
  + 'like want need what how please thanks thank yes no not just about from so but or if will get make some one two three '
  + 'four five six seven eight nine zero oh hello hi okay well there here time today tomorrow morning day').split(' ');

/** Whole-word, case-insensitive: does `text` contain one of `phrases`? (as the flow's keywordMatch) */
function containsAny(text: string, phrases: readonly string[]): string | undefined {
  const hay = ` ${text.toLowerCase().split(/\s+/).join(' ')} `;
  return phrases.find((p) => hay.includes(` ${p} `));
}

/**
 * Second opinion for an utterance whose text has none of the expected phrases: decode its audio
 * again with a grammar of those phrases (weighted 20:1) among frequent words. A phrase the
 * grammar hears is added to the text; the language model's words are kept.
 */
function keywordCheck(text: string): string {
  const phrases = bias.filter((p) => p.split(' ').every((w) => api.lookup(decoder, w)));
  if (phrases.length === 0 || utterance.length === 0 || containsAny(text, bias)) return text;
  const key = phrases.join('|');
  if (key !== grammarKey) {
    const words = [...phrases.map((p) => `/20/ (${p})`), ...FILLER.filter((f) => !phrases.includes(f)).map((f) => `/1/ ${f}`)];
    const jsgf = `#JSGF V1.0;\ngrammar bias;\npublic <s> = (<w>)+ ;\n<w> = ${words.join(' | ')} ;\n`;
    if ((api.setJsgf(decoder, 'bias', jsgf) as number) < 0) return text;
    grammarKey = key;
  }
  api.setSearch(decoder, 'bias');
  try {
    api.start(decoder);
    for (const pcm of utterance) api.process(decoder, pcm, pcm.length, 0, 0);
    api.end(decoder);
    const heard = containsAny(hypothesis(), phrases);
    return heard ? `${text} ${heard}`.trim() : text;
  } finally {
    api.setSearch(decoder, '_default');
  }
}
let sinceInterim = 0;
let lastInterim = '';

function hypothesis(): string {
  const text = api.hyp(decoder, [0]) as string | null;
  return (text ?? '').trim();
}

function onAudio(pcm: Int16Array): void {
  if (!inUtterance) {
    if ((api.start(decoder) as number) < 0) throw new Error('ps_start_utt failed');
    inUtterance = true;
    sinceInterim = 0;
    lastInterim = '';
    bias = nextBias;
    utterance = [];
  }
  if (bias.length > 0) utterance.push(pcm);
  if ((api.process(decoder, pcm, pcm.length, 0, 0) as number) < 0) throw new Error('ps_process_raw failed');
  sinceInterim += pcm.length;
  decoded += pcm.length;
  if (sinceInterim >= data.interimEverySamples) {
    sinceInterim = 0;
    post({ type: 'progress', samples: decoded });
    const text = hypothesis();
    if (text && text !== lastInterim) {
      lastInterim = text;
      post({ type: 'interim', text });
    }
  }
}

function onEnd(id: number): void {
  if (!inUtterance) {
    post({ type: 'final', id, text: '' });
    return;
  }
  inUtterance = false;
  if ((api.end(decoder) as number) < 0) throw new Error('ps_end_utt failed');
  const text = bias.length > 0 ? keywordCheck(hypothesis()) : hypothesis();
  utterance = [];
  post({ type: 'final', id, text });
}

if (decoder) {
  port.on('message', (m: DecoderIn) => {
    try {
      if (m.type === 'audio') onAudio(m.pcm);
      else if (m.type === 'end') onEnd(m.id);
      else if (m.type === 'bias') nextBias = m.phrases;
      else if (m.type === 'close') {
        api.free(decoder);
        decoder = undefined;
        port.close();
      }
    } catch (e) {
      post({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
      port.close();
    }
  });
}
