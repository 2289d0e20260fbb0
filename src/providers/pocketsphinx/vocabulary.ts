// The pronouncing dictionary a library-mode decoder loads: the full dictionary's entries for the
// words its language model knows, not all of them. Each pooled decoder holds its own copy of the
// dictionary, and the Debian model's cmudict-en-us.dict has 134,723 entries where its
// en-us.lm.bin knows 72,547 words (79,419 entries with their variant pronunciations); a decoder
// loaded on the whole dictionary takes 91 MB, on the language model's words 79 MB
// (BENCHMARKS.md, "Memory per embedded call"). The language model's search only ever looks at the
// words it knows, so it hears the same; a grammar's word the language model does not know is
// looked up in the full dictionary when the grammar is set (decoder.worker.ts, install).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Sphinxbase {
  func(signature: string): (...args: unknown[]) => unknown;
}

/** One dictionary written per language model and full dictionary, per process. */
const written = new Map<string, string>();

/**
 * The path of a dictionary holding the entries of `dictFile` (every pronunciation) whose word is
 * in `lmFile`'s vocabulary, written once per process in a private temporary directory (removed
 * when the process exits); the vocabulary is read through libsphinxbase (koffi), so call it only
 * where library mode runs. Takes about 0.3 s (the language model is read once, then freed).
 */
export function languageModelDictionary(lmFile: string, dictFile: string): string {
  const key = `${lmFile}\n${dictFile}`;
  const known = written.get(key);
  if (known) return known;
  const vocabulary = languageModelWords(lmFile);
  const kept = readFileSync(dictFile, 'utf8')
    .split('\n')
    .filter((line) => vocabulary.has(line.slice(0, line.indexOf(' ')).replace(/\(\d+\)$/, '')));
  const dir = mkdtempSync(join(tmpdir(), 'pocketsphinx-dict-'));
  // The decoders read it when they load, for as long as the process runs; gone with the process.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'lm-words.dict');
  writeFileSync(file, `${kept.join('\n')}\n`);
  written.set(key, file);
  return file;
}

/** The words of a language model (sphinxbase's ngram_model_read: ARPA, DMP or trie binary). */
function languageModelWords(lmFile: string): Set<string> {
  const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): Sphinxbase; decode(ptr: unknown, type: string, len: number): ArrayLike<number> };
  const sb = koffi.load('libsphinxbase.so.3');
  const logmathInit = sb.func('void *logmath_init(double base, int shift, int use_table)');
  const logmathFree = sb.func('int logmath_free(void *lmath)');
  const read = sb.func('void *ngram_model_read(void *config, const char *file, int type, void *lmath)');
  const counts = sb.func('const uint32_t *ngram_model_get_counts(void *model)');
  const word = sb.func('const char *ngram_word(void *model, int32_t wid)');
  const free = sb.func('int ngram_model_free(void *model)');
  // Its INFO lines would go to stderr; the decoders set their own log (-logfn) when they load.
  sb.func('void err_set_logfp(void *stream)')(null);
  // The decoder's own -lw/-wip do not matter here: only the words are read. 0: NGRAM_AUTO.
  const lmath = logmathInit(1.0001, 0, 0);
  const model = read(null, lmFile, 0, lmath);
  if (!model) {
    logmathFree(lmath);
    throw new Error(`the language model ${lmFile} could not be read`);
  }
  try {
    const unigrams = koffi.decode(counts(model), 'uint32_t', 1)[0]!;
    const words = new Set<string>();
    for (let wid = 0; wid < unigrams; wid++) words.add(word(model, wid) as string);
    return words;
  } finally {
    free(model);
    logmathFree(lmath);
  }
}

/**
 * `word`'s pronunciations in the dictionary `dictFile` (sphinx format: `word PH1 PH2 ...`, variants
 * as `word(2)`), in the file's order: [entry, phones]. Reads the whole file (3.3 MB for
 * cmudict-en-us.dict, some 20 ms): for the rare grammar word the language model does not know.
 */
export function pronunciations(dictFile: string, word: string): Array<[string, string]> {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const entry = new RegExp(`^(${escaped}(?:\\(\\d+\\))?) (.+)$`, 'gm');
  return [...readFileSync(dictFile, 'utf8').matchAll(entry)].map((m) => [m[1]!, m[2]!.trim()]);
}
