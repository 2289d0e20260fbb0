// Worker thread that runs one PocketSphinx decoder in-process through libpocketsphinx (called with
// koffi, no headers or compiler needed), so decoding follows the caller's audio as it arrives and
// never blocks the event loop that paces the call's audio. The decoder is loaded once and serves
// the utterances of many calls in turn (decoder-pool.ts): each holder's messages start with
// 'begin' (its lease and what the utterance is expected to be) and end with 'reset'.
// Protocol, in order (one message at a time, so utterances never get out of step):
//   in  {type:'begin', lease, bias, expectation?, cmn?, start?} | {type:'audio', pcm: Int16Array} | {type:'end', id}
//       | {type:'reset'} | {type:'close'}
//   out {type:'ready'} | {type:'interim', lease, text} | {type:'progress', lease, samples}
//       | {type:'final', lease, id, text, words?, cmn?} | {type:'failed', message}
// 'words' are the final text's words with their times, ms from the utterance's first sample (the
// segments of the search that chose the text, read once when the utterance ends); absent when the
// text came from the lattice without its words' frames.
// 'cmn' is the holder's cepstral mean after the utterance (the channel's average spectrum, which
// the decoder learns as it hears a caller): the holder hands it back with its next 'begin', so a
// call keeps what its decoder learnt of its line, and no call starts from another's. A holder
// may also give one with its first 'begin', marked 'start': the mean its call starts on where that
// is not the model's (a telephone-band call's, pocketsphinx.stt.ts telephoneBandMean).
// 'progress' counts the samples of the lease decoded so far, after every chunk, so the parent can
// bound the audio queued for us and the end of turn knows how far the decoder has heard.
// 'failed' is fatal (the decoder could not load or crashed); the pool fails the holder.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { MAX_WORDS_PER_UTTERANCE, type SttExpectation, type SttWord } from '../stt.ts';
import { DIRECTED_MIN_POSTERIOR, directedGrammar, holdsOtherPhrase, openHeardSequence, phrasePlausible, sequencePlausible, spansAnswer, type DirectedGrammar } from './directed.ts';
import { pronunciations } from './vocabulary.ts';
import { containsPhrase, PHRASE_MIN_POSTERIOR, strongest, withPhrase, withPhraseWords, type PhraseEvidence, type TimedWord } from './expected-phrase.ts';

export interface DecoderWorkerData {
  /** Decoder arguments as on the command line: ['-hmm', dir, '-lm', file, ...]. */
  args: string[];
  /** Audio between two interim hypotheses, samples. */
  interimEverySamples: number;
  /** Sample rate of the audio (and of -samprate in args), Hz. */
  rateHz: number;
  /** Audio between two progress reports, samples; 0: after every chunk. */
  progressEverySamples: number;
  /** Whether a call's first utterance is decoded again on the mean learnt from it (decodeOnLearntMean). */
  redecodeFirstUtterance: boolean;
  /**
   * The full pronouncing dictionary, where the `-dict` of args holds only the language model's
   * words (vocabulary.ts): a grammar's word missing from the decoder's is looked up here.
   */
  fullDictionary?: string;
}

/** What the pool gives each thread beside its DecoderWorkerData (not part of the decoder's set-up key). */
export interface DecoderThreadData {
  /**
   * One Int32: the id of the last lease given back. A holder that lets go mid-utterance (its call
   * ended, or failed behind real time) may leave seconds of audio queued for the thread; decoding
   * it would serve no one, hold the thread busy past its retirement (it was then terminated, its
   * model never freed: BENCHMARKS.md, "Memory after the calls") and take CPU from other calls.
   */
  released: SharedArrayBuffer;
}

export type DecoderIn =
  /** The next utterance's holder and expectations: phrases to bias towards, a grammar when closed. */
  | { type: 'begin'; lease: number; bias: string[]; expectation?: SttExpectation; cmn?: CmnState; start?: true }
  | { type: 'audio'; pcm: Int16Array }
  | { type: 'end'; id: number }
  /** The holder gives the decoder back: an utterance in progress is dropped, nothing is kept. */
  | { type: 'reset' }
  | { type: 'close' };

export type DecoderOut =
  | { type: 'ready' }
  | { type: 'interim'; lease: number; text: string }
  | { type: 'progress'; lease: number; samples: number }
  | { type: 'final'; lease: number; id: number; text: string; words?: SttWord[]; cmn?: CmnState }
  | { type: 'failed'; message: string };

/** The live cepstral mean normalisation's state (sphinxbase cmn_t): mean and sum per coefficient, frames summed. */
export interface CmnState {
  mean: number[];
  sum: number[];
  nframe: number;
}

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
  decode(ptr: unknown, offset: number, type: unknown, len?: number): unknown;
  encode(ptr: unknown, offset: number, type: unknown, value: unknown): void;
  array(type: string, len: number): unknown;
}

const port = parentPort;
if (!port) throw new Error('decoder.worker.ts runs as a worker thread');
const data = workerData as DecoderWorkerData & DecoderThreadData;
/** The last lease given back, set by the pool when its holder lets go (DecoderThreadData). */
const releasedLease = new Int32Array(data.released);
/** Whether the current holder has given the decoder back: its audio still queued here is not decoded. */
const abandoned = (): boolean => lease !== 0 && lease <= Atomics.load(releasedLease, 0);
const post = (m: DecoderOut): void => port.postMessage(m);

const koffi = createRequire(import.meta.url)('koffi') as Koffi;

function load() {
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
    // The best path with its frames, and the word lattice with its posteriors (ps_lattice.h).
    segIter: ps.func('void *ps_seg_iter(void *ps)'),
    segNext: ps.func('void *ps_seg_next(void *seg)'),
    segWord: ps.func('const char *ps_seg_word(void *seg)'),
    segFrames: ps.func('void ps_seg_frames(void *seg, _Out_ int *sf, _Out_ int *ef)'),
    prob: ps.func('int32_t ps_get_prob(void *ps)'),
    // The stream frame where the front end last began speech (acmod.h; exported by the library).
    streamOffset: ps.func('int acmod_stream_offset(void *acmod)'),
    lattice: ps.func('void *ps_get_lattice(void *ps)'),
    logmath: ps.func('void *ps_get_logmath(void *ps)'),
    exp: sb.func('double logmath_exp(void *lmath, int32_t p)'),
    nodes: ps.func('void *ps_latnode_iter(void *dag)'),
    nodesNext: ps.func('void *ps_latnode_iter_next(void *it)'),
    node: ps.func('void *ps_latnode_iter_node(void *it)'),
    nodeWord: ps.func('const char *ps_latnode_baseword(void *dag, void *node)'),
    nodeStart: ps.func('int ps_latnode_times(void *node, _Out_ int16_t *fef, _Out_ int16_t *lef)'),
    nodeProb: ps.func('int32_t ps_latnode_prob(void *dag, void *node, _Out_ void **link)'),
    exits: ps.func('void *ps_latnode_exits(void *node)'),
    linksNext: ps.func('void *ps_latlink_iter_next(void *it)'),
    link: ps.func('void *ps_latlink_iter_link(void *it)'),
    linkTo: ps.func('void *ps_latlink_nodes(void *link, _Out_ void **src)'),
    linkEnd: ps.func('int ps_latlink_times(void *link, _Out_ int16_t *sf)'),
    linkProb: ps.func('int32_t ps_latlink_prob(void *dag, void *link, _Out_ int32_t *ascr)'),
    free: ps.func('int ps_free(void *ps)'),
    // Directed recognition: a grammar search beside the language model's (pocketsphinx.h).
    setJsgf: ps.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)'),
    setSearch: ps.func('int ps_set_search(void *ps, const char *name)'),
    lookup: ps.func('const char *ps_lookup_word(void *ps, const char *word)'),
    // update 0: the language model's search is not rebuilt (it does not hear the word; a grammar set after does).
    addWord: ps.func('int ps_add_word(void *ps, const char *word, const char *phones, int update)'),
    // Gives the freed model's pages back to the system when the decoder is closed (glibc).
    trim: koffi.load('libc.so.6').func('int malloc_trim(size_t pad)'),
  };
}

let api: ReturnType<typeof load>;
let decoder: unknown;
/** The decoder's acoustic model (ps_decoder_t's acmod), where its layout is the one checked; else no word times. */
let acmod: unknown;
/** The decoder's live CMN, when its structures are laid out as expected; its state as loaded. */
let cmn: ReturnType<typeof cmnAccess>;
let loadedCmn: CmnState | undefined;
/** The mean the holder's call started on, as the decoder holds it: the model's as loaded, or the one its first 'begin' gave. */
let startCmn: CmnState | undefined;

/**
 * Reads and writes the decoder's live CMN (sphinxbase cmn_live.c), which the library has no call
 * for: ps_decoder_t -> acmod (offset 16) -> feat_t fcb (32) -> cmn_struct (88); cmn_t is
 * {mean*, var*, sum*, int32 nframe, int32 veclen}. The layout of Debian's 0.8+5prealpha on a
 * 64-bit machine, checked on the loaded decoder (13 cepstra, one stream, veclen 13, the model's
 * -cmninit as mean); undefined on any other, and calls then share what the decoder learnt.
 */
function cmnAccess(ps: unknown): { read(): CmnState; write(state: CmnState): void } | undefined {
  if (process.arch !== 'x64' && process.arch !== 'arm64') return undefined;
  const acmod = koffi.decode(ps, 16, 'void *');
  const fcb = acmod && koffi.decode(acmod, 32, 'void *');
  if (!fcb || koffi.decode(fcb, 16, 'int32') !== 13 || koffi.decode(fcb, 20, 'int32') !== 1) return undefined;
  const struct = koffi.decode(fcb, 88, 'void *');
  if (!struct || koffi.decode(struct, 28, 'int32') !== 13) return undefined;
  const mean = koffi.decode(struct, 0, 'void *');
  const sum = koffi.decode(struct, 16, 'void *');
  const vector = koffi.array('float', 13);
  const read = (): CmnState => ({
    mean: [...(koffi.decode(mean, 0, 'float', 13) as Float32Array)],
    sum: [...(koffi.decode(sum, 0, 'float', 13) as Float32Array)],
    nframe: koffi.decode(struct, 24, 'int32') as number,
  });
  if (read().mean[0] === 0) return undefined; // no -cmninit seen: not the structure we think
  return {
    read,
    write(state) {
      if (state.mean.length !== 13 || state.sum.length !== 13 || !Number.isInteger(state.nframe)) return;
      koffi.encode(mean, 0, vector, state.mean);
      koffi.encode(sum, 0, vector, state.sum);
      koffi.encode(struct, 24, 'int32', state.nframe);
    },
  };
}
/**
 * ps_decoder_t's acmod (offset 16 on a 64-bit machine, as cmnAccess reads it), taken only where it
 * looks right: a fresh decoder's stream offset is 0.
 */
function acmodOf(ps: unknown): unknown {
  if (process.arch !== 'x64' && process.arch !== 'arm64') return undefined;
  const pointer = koffi.decode(ps, 16, 'void *');
  return pointer && api.streamOffset(pointer) === 0 ? pointer : undefined;
}

try {
  api = load();
  const config = api.parse(null, api.psArgs(), data.args.length, data.args, 1);
  if (!config) throw new Error('the decoder rejected its arguments');
  decoder = api.init(config);
  if (!decoder) throw new Error('the decoder could not load its model');
  cmn = cmnAccess(decoder);
  acmod = acmodOf(decoder);
  loadedCmn = startCmn = cmn?.read();
  post({ type: 'ready' });
} catch (e) {
  post({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
  port.close();
}

let inUtterance = false;
/**
 * Samples the decoder's front end has taken since it was loaded: its frame count (the segments'
 * frames) runs from there, not from each utterance's start.
 */
let streamSamples = 0;

/**
 * Where the front end's speech detector began speech in the utterance being decoded: the stream
 * frame of each start (acmod_stream_offset). The front end drops the frames of a pause longer than
 * its -vad_postspeech (0.5 s) and the segments are then counted from the last start, so word times
 * are read only for an utterance with one start.
 */
interface SpeechStarts {
  /** Samples taken before the utterance (its first sample's place on the stream). */
  baseSamples: number;
  /** The offset as it was before the utterance, and each new one seen. */
  last: number;
  count: number;
}
let speech: SpeechStarts = { baseSamples: 0, last: 0, count: 0 };

/** Most audio given to the front end at once while speech starts are read: two starts are at least 0.5 s apart. */
const MAX_PIECE_SAMPLES = 4_000;

/**
 * ps_process_raw over `pcm`, counting the stream's samples and, when `starts` is given, the
 * speech starts (read once per piece: a pipeline's 20 ms chunk is one piece). False on failure.
 */
function processRaw(pcm: Int16Array, starts?: SpeechStarts): boolean {
  const step = starts ? MAX_PIECE_SAMPLES : pcm.length;
  for (let at = 0; at < pcm.length; at += step) {
    const piece = pcm.subarray(at, at + step);
    streamSamples += piece.length;
    if ((api.process(decoder, piece, piece.length, 0, 0) as number) < 0) return false;
    if (starts && acmod) {
      const offset = api.streamOffset(acmod) as number;
      if (offset !== starts.last) {
        starts.last = offset;
        starts.count++;
      }
    }
  }
  return true;
}
/** The holder of the decoder now (begin), and the samples of its audio decoded. */
let lease = 0;
let decoded = 0;
/** Phrases for the next utterance (bias message) and for the one being decoded. */
let nextBias: string[] = [];
let bias: string[] = [];
let sinceInterim = 0;
let sinceProgress = 0;
let lastInterim = '';

/** The language model's search (PS_DEFAULT_SEARCH) and the one directed grammars are set under. */
const OPEN_SEARCH = '_default';
const DIRECTED_SEARCH = 'directed';
/** The grammar for the next utterance (expect message), the one set in the decoder, and this utterance's. */
let nextGrammar: DirectedGrammar | undefined;
let installed: DirectedGrammar | undefined;
let directed: DirectedGrammar | undefined;
/** The current utterance's audio while it is directed or on the mean its call started on: decoded again once it has ended. */
let utteranceAudio: Int16Array[] = [];
/** Whether the current utterance began on the mean its call started on (a call's first words). */
let onStartingMean = false;

/** Whether the live cepstral mean is still the one the holder's call started on: nothing learnt from the caller yet. */
function meanAsStarted(): boolean {
  const now = cmn?.read();
  return now !== undefined && startCmn !== undefined && now.nframe === startCmn.nframe && now.mean.every((m, i) => m === startCmn!.mean[i]);
}

function hypothesis(): string {
  const text = api.hyp(decoder, [0]) as string | null;
  return (text ?? '').trim();
}

/** `<s>`, `</s>`, `<sil>`, `[NOISE]`: the dictionary's fillers, and a grammar's `(NULL)` transitions: never words of the text. */
const isFiller = (word: string): boolean => word.startsWith('<') || word.startsWith('[') || word.startsWith('+') || word === '(NULL)';

/** The best path's words (pronunciation variants as their base word) with their frames from its first segment, and that segment's frame on the stream. */
function bestPath(): { path: TimedWord[]; origin: number | undefined } {
  const path: TimedWord[] = [];
  // The iterator may count frames from the decoder's first utterance, the lattice from this one's
  // start, where the path's first segment (<s>) begins.
  let origin: number | undefined;
  for (let seg = api.segIter(decoder); seg; seg = api.segNext(seg)) {
    const start = [0];
    const end = [0];
    api.segFrames(seg, start, end);
    origin ??= start[0]!;
    const word = api.segWord(seg) as string;
    if (!isFiller(word)) path.push({ word: word.replace(/\(\d+\)$/, ''), start: start[0]! - origin, end: end[0]! - origin });
  }
  return { path, origin };
}

/**
 * Where the utterance's word lattice holds one of `phrases`, and how probable it is there: a node's
 * posterior (its best exit) for one word; for several, a chain of nodes linked word by word
 * (fillers between them skipped), as probable as its least probable link. Chains fainter than
 * `minPosterior` are not followed. The posteriors are those of ps_get_prob, with the decoder's
 * own acoustic scale (-ascale).
 */
function latticeEvidence(phrases: readonly string[], minPosterior: number): PhraseEvidence[] {
  api.prob(decoder);
  const dag = api.lattice(decoder);
  if (!dag) return [];
  const lmath = api.logmath(decoder);
  const posterior = (logp: number): number => api.exp(lmath, logp) as number;
  const wordOf = (node: unknown): string => api.nodeWord(dag, node) as string;
  /** Posterior of a node's best exit, and that exit's last frame. */
  const bestExit = (node: unknown): { posterior: number; end: number } => {
    const link: unknown[] = [null];
    const p = posterior(api.nodeProb(dag, node, link) as number);
    return { posterior: p, end: link[0] ? (api.linkEnd(link[0], null) as number) : (api.nodeStart(node, null, null) as number) };
  };
  const out: PhraseEvidence[] = [];
  /** `words`: the phrase's words so far, the last one `node`'s (its end not known yet) unless `node` is a filler. */
  const follow = (phrase: string, rest: readonly string[], node: unknown, start: number, least: number, words: readonly TimedWord[]): void => {
    const open = !isFiller(wordOf(node));
    for (let it = api.exits(node); it; it = api.linksNext(it)) {
      const link = api.link(it);
      const next = api.linkTo(link, null);
      const p = Math.min(least, posterior(api.linkProb(dag, link, null) as number));
      if (p < minPosterior) continue;
      // A link leaves its source word at its own last frame.
      const closed = open ? [...words.slice(0, -1), { ...words.at(-1)!, end: api.linkEnd(link, null) as number }] : words;
      const word = wordOf(next);
      const from = (): TimedWord => ({ word, start: api.nodeStart(next, null, null) as number, end: -1 });
      if (isFiller(word) && word !== '</s>') follow(phrase, rest, next, start, p, closed);
      else if (word === rest[0] && rest.length > 1) follow(phrase, rest.slice(1), next, start, p, [...closed, from()]);
      else if (word === rest[0]) {
        const exit = bestExit(next);
        if (Math.min(p, exit.posterior) >= minPosterior) out.push({ phrase, start, end: exit.end, posterior: Math.min(p, exit.posterior), words: [...closed, { ...from(), end: exit.end }] });
      }
    }
  };
  const split = phrases.map((p) => ({ phrase: p, words: p.split(' ') }));
  for (let it = api.nodes(dag); it; it = api.nodesNext(it)) {
    const node = api.node(it);
    const word = wordOf(node);
    for (const { phrase, words } of split) {
      if (words[0] !== word) continue;
      const start = api.nodeStart(node, null, null) as number;
      const exit = bestExit(node);
      if (exit.posterior < minPosterior) continue;
      if (words.length === 1) out.push({ phrase, start, end: exit.end, posterior: exit.posterior, words: [{ word, start, end: exit.end }] });
      else follow(phrase, words.slice(1), node, start, exit.posterior, [{ word, start, end: -1 }]);
    }
  }
  return out;
}

/** An utterance's text, and its words with their frames where they are known. */
interface Heard {
  text: string;
  words: readonly TimedWord[] | undefined;
  /** The words' frame 0 on the stream (their path's first segment), or undefined. */
  origin: number | undefined;
  /** The speech starts of the decode the words come from. */
  starts: SpeechStarts;
}

/** `best`'s text with `found` in its place, and their words (the lattice's frames count from the same first segment). */
function heardWith(best: ReturnType<typeof bestPath>, found: PhraseEvidence, starts: SpeechStarts): Heard {
  return { text: withPhrase(best.path, found), words: withPhraseWords(best.path, found), origin: best.origin, starts };
}

/**
 * Biasing, for an utterance whose best path has none of the expected phrases: the word lattice the
 * decoder built anyway holds the other paths it weighed, with their posterior probabilities. An
 * expected phrase whose posterior reaches PHRASE_MIN_POSTERIOR replaces the words heard where it
 * was spoken. No second decode: the lattice is read in about a millisecond.
 */
function withExpectedPhrase(text: string): Heard {
  const best = bestPath();
  const asHeard: Heard = { text, words: best.path, origin: best.origin, starts: speech };
  if (bias.length === 0 || containsPhrase(text, bias)) return asHeard;
  const found = strongest(latticeEvidence(bias, PHRASE_MIN_POSTERIOR));
  return found ? heardWith(best, found, speech) : asHeard;
}

function onAudio(pcm: Int16Array): void {
  if (!inUtterance) {
    if ((api.start(decoder) as number) < 0) throw new Error('ps_start_utt failed');
    inUtterance = true;
    sinceInterim = 0;
    lastInterim = '';
    bias = nextBias;
    speech = { baseSamples: streamSamples, last: acmod ? (api.streamOffset(acmod) as number) : 0, count: 0 };
    directed = nextGrammar && install(nextGrammar) ? nextGrammar : undefined;
    onStartingMean = data.redecodeFirstUtterance && (directed !== undefined || bias.length > 0) && meanAsStarted();
    utteranceAudio = [];
  }
  if (directed || onStartingMean) utteranceAudio.push(pcm);
  if (!processRaw(pcm, speech)) throw new Error('ps_process_raw failed');
  sinceInterim += pcm.length;
  decoded += pcm.length;
  // After every chunk by default, not every interim: the adaptive end of turn waits for the
  // decoder to have heard 250 ms past the speech, and a coarser report made it wait up to one
  // report longer (BENCHMARKS.md, "Embedded engines at scale").
  sinceProgress += pcm.length;
  if (sinceProgress >= data.progressEverySamples) {
    sinceProgress = 0;
    post({ type: 'progress', lease, samples: decoded });
  }
  if (sinceInterim >= data.interimEverySamples) {
    sinceInterim = 0;
    const text = hypothesis();
    if (text && text !== lastInterim) {
      lastInterim = text;
      post({ type: 'interim', lease, text });
    }
  }
}

/**
 * Sets `grammar` as the directed search, once per grammar; false when a word of it is missing
 * from the dictionary (the language model decodes then, as for an open expectation). A word the
 * decoder's dictionary lacks (it holds the language model's words only) is added from the full
 * one, with every pronunciation, and stays for the decoder's life.
 */
function install(grammar: DirectedGrammar): boolean {
  if (installed?.jsgf === grammar.jsgf) return true;
  if (!grammar.words.every((w) => api.lookup(decoder, w) || addFromFullDictionary(w))) return false;
  if ((api.setJsgf(decoder, DIRECTED_SEARCH, grammar.jsgf) as number) < 0) return false;
  installed = grammar;
  return true;
}

/** Adds `word`'s pronunciations from the full dictionary to the decoder's; false when it has none. */
function addFromFullDictionary(word: string): boolean {
  if (!data.fullDictionary) return false;
  const found = pronunciations(data.fullDictionary, word);
  return found.length > 0 && found.every(([entry, phones]) => (api.addWord(decoder, entry, phones, 0) as number) >= 0);
}

/** The grammar's answer for the utterance just ended, decoded from its kept audio, with its words; the language model's search is active again after. */
function grammarAnswer(audio: readonly Int16Array[]): Heard {
  if ((api.setSearch(decoder, DIRECTED_SEARCH) as number) < 0) throw new Error('ps_set_search failed');
  const starts: SpeechStarts = { baseSamples: streamSamples, last: acmod ? (api.streamOffset(acmod) as number) : 0, count: 0 };
  const ok = (api.start(decoder) as number) >= 0 && audio.every((pcm) => processRaw(pcm, starts)) && (api.end(decoder) as number) >= 0;
  const text = ok ? hypothesis().replace(/\(\d+\)/g, '') : '';
  const best = ok ? bestPath() : { path: [], origin: undefined };
  if ((api.setSearch(decoder, OPEN_SEARCH) as number) < 0) throw new Error('ps_set_search failed');
  if (!ok) throw new Error('the directed search failed');
  return { text, words: best.path, origin: best.origin, starts };
}

/**
 * Directed recognition of the utterance just ended by the language model: the grammar chooses
 * the expected answer that best fits the audio, and the answer is taken only when the open
 * language model's lattice of the same audio holds it (a phrase, at DIRECTED_MIN_POSTERIOR, over
 * enough of the speech: spansAnswer) or
 * the language model heard little more speech than it (phrasePlausible, sequencePlausible); a value
 * sequence the language model heard by itself is taken as it heard it (openHeardSequence). Otherwise the caller said something
 * else, and the language model's text stands, so the flow's else edge is taken.
 */
function directedText(grammar: DirectedGrammar, audio: readonly Int16Array[]): Heard {
  const open = hypothesis();
  // The lattice and best path are the language model's only until the grammar decodes.
  const evidence = latticeEvidence([...new Set([...grammar.phrases, ...bias])], DIRECTED_MIN_POSTERIOR);
  const best = bestPath();
  const path = best.path;
  const openStarts = speech;
  const asAnswer = grammarAnswer(audio);
  const answer = asAnswer.text;
  const asOpen: Heard = { text: open, words: path, origin: best.origin, starts: openStarts };
  const heardWithPhrase = (found: PhraseEvidence): Heard => heardWith(best, found, openStarts);
  // A phrase only the lattice holds is taken where it spans enough of the speech (spansAnswer).
  const biased = (): Heard => {
    if (bias.length === 0 || containsPhrase(open, bias)) return asOpen;
    const found = strongest(evidence.filter((e) => spansAnswer(e, path)), PHRASE_MIN_POSTERIOR);
    return found ? heardWithPhrase(found) : asOpen;
  };
  if (!answer) return biased();
  if (grammar.phrases.includes(answer)) {
    if (containsPhrase(open, [answer])) {
      // A short answer holding two expected phrases: the grammar's choice, not the edges' order.
      return holdsOtherPhrase(grammar, answer, open) && phrasePlausible(answer.split(' ').length, path.length) ? asAnswer : asOpen;
    }
    const found = strongest(evidence.filter((e) => e.phrase === answer && spansAnswer(e, path)), DIRECTED_MIN_POSTERIOR);
    if (found) return heardWithPhrase(found);
    return phrasePlausible(answer.split(' ').length, path.length) ? asAnswer : biased();
  }
  if (openHeardSequence(grammar, open)) return asOpen;
  return sequencePlausible(answer.split(' ').length, path.length, grammar.digitCount !== undefined) ? asAnswer : biased();
}

/**
 * Decodes the utterance just ended again with the language model, on the cepstral mean the decoder
 * learnt from it. The first utterance of a call is decoded on the mean the call started on, the
 * model's -cmninit (the average spectrum of the model's training speech) or a telephone-band
 * call's, not the caller's line (the live mean is updated when an utterance ends): a Flite
 * voice's "i want to buy a new phone" as a call's first words was heard "i want a barn new phone",
 * the lattice holding "buy" nowhere near where it was said, and the same audio after any other
 * utterance of the voice was heard right (BENCHMARKS.md, "The first utterance of a call"). Done
 * only where it may change what the node hears: an utterance on the mean its call started on, at
 * a node expecting something, whose text holds none of it; or, where the call started on a mean
 * of its own (a telephone-band call's, weighted as 1 s of speech), every such first utterance. What
 * the decoder learnt from the utterance is kept as the first decode left it (the audio is not
 * counted twice).
 */
function decodeOnLearntMean(audio: readonly Int16Array[]): void {
  const learnt = cmn?.read();
  const starts: SpeechStarts = { baseSamples: streamSamples, last: acmod ? (api.streamOffset(acmod) as number) : 0, count: 0 };
  const ok = (api.start(decoder) as number) >= 0 && audio.every((pcm) => processRaw(pcm, starts)) && (api.end(decoder) as number) >= 0;
  if (!ok) throw new Error('the second decode failed');
  speech = starts;
  if (learnt) cmn?.write(learnt);
}

/** A feature frame, ms (the decoder's -frate: 100 frames a second by default). */
const FRAME_MS = 10;

/**
 * `heard`'s words in ms from the utterance's first sample (a frame's end is inclusive), when they
 * are the text's own words in order and the decode of `starts` began speech once (after a longer
 * pause the front end dropped frames without saying where); otherwise none: no times are guessed.
 */
function timedWords(heard: Heard): SttWord[] | undefined {
  const { words, origin, starts } = heard;
  if (!words || words.length === 0 || words.length > MAX_WORDS_PER_UTTERANCE || origin === undefined || !acmod || starts.count !== 1) return undefined;
  if (words.map((w) => w.word).join(' ') !== heard.text.split(/\s+/).filter(Boolean).join(' ')) return undefined;
  const zeroMs = origin * FRAME_MS - (starts.baseSamples * 1000) / data.rateHz;
  // The segments' frames lie in the audio of this decode, or their clock is not the one read.
  if (zeroMs < -FRAME_MS || (origin + words.at(-1)!.end) * FRAME_MS > (streamSamples * 1000) / data.rateHz + FRAME_MS) return undefined;
  return words.map((w) => ({ word: w.word, startMs: Math.max(0, zeroMs + w.start * FRAME_MS), endMs: zeroMs + (w.end + 1) * FRAME_MS }));
}

function onEnd(id: number): void {
  if (!inUtterance) {
    post({ type: 'final', lease, id, text: '' });
    return;
  }
  inUtterance = false;
  if ((api.end(decoder) as number) < 0) throw new Error('ps_end_utt failed');
  const audio = utteranceAudio;
  utteranceAudio = [];
  // A start of the holder's own is an estimate of its line (a telephone-band call's): its first
  // utterance is always decoded again, on the mean learnt from it.
  if (onStartingMean && (startCmn !== loadedCmn || !containsPhrase(hypothesis(), [...bias, ...(directed?.phrases ?? [])]))) decodeOnLearntMean(audio);
  const heard = directed ? directedText(directed, audio) : withExpectedPhrase(hypothesis());
  const words = timedWords(heard);
  const learnt = cmn?.read();
  post({ type: 'final', lease, id, text: heard.text, ...(words ? { words } : {}), ...(learnt ? { cmn: learnt } : {}) });
}

/** Silence that brings the front end's speech detector back to "not in speech": 600 ms at the decoder's rate. */
const FLUSH = new Int16Array((data.rateHz * 600) / 1000);

/**
 * Back to how it was loaded: no utterance, the language model's search, no bias or grammar, the
 * cepstral mean as loaded. An utterance cut off mid-speech also left the front end's speech
 * detector inside speech (measured: the next holder's first words were heard differently), so
 * a short utterance of silence is decoded after it.
 */
function reset(): void {
  if (inUtterance) {
    inUtterance = false;
    if ((api.end(decoder) as number) < 0) throw new Error('ps_end_utt failed');
    if ((api.setSearch(decoder, OPEN_SEARCH) as number) < 0) throw new Error('ps_set_search failed');
    const ok = (api.start(decoder) as number) >= 0 && processRaw(FLUSH) && (api.end(decoder) as number) >= 0;
    if (!ok) throw new Error('the decoder could not be reset');
  }
  if ((api.setSearch(decoder, OPEN_SEARCH) as number) < 0) throw new Error('ps_set_search failed');
  utteranceAudio = [];
  onStartingMean = false;
  bias = nextBias = [];
  directed = nextGrammar = undefined;
  lease = 0;
  decoded = 0;
  if (loadedCmn) cmn?.write(loadedCmn);
  startCmn = loadedCmn;
}

if (decoder) {
  port.on('message', (m: DecoderIn) => {
    try {
      if (m.type === 'audio') {
        if (!abandoned()) onAudio(m.pcm);
      } else if (m.type === 'end') {
        if (!abandoned()) onEnd(m.id);
      } else if (m.type === 'begin') {
        if (m.lease !== lease) reset();
        lease = m.lease;
        nextBias = m.bias;
        nextGrammar = m.expectation ? directedGrammar(m.expectation) : undefined;
        if (m.cmn && !inUtterance) {
          cmn?.write(m.cmn);
          if (m.start) startCmn = cmn?.read();
        }
      } else if (m.type === 'reset') reset();
      else if (m.type === 'close') {
        api.free(decoder);
        decoder = undefined;
        api.trim(0);
        port.close();
      }
    } catch (e) {
      post({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
      port.close();
    }
  });
}
