// Worker thread that runs Flite (WASI) so synthesis never blocks the event loop that paces audio.
// Protocol: in {id, voice, text, lexicon?, durationStretch?} (flite.lexicon.ts); out {id, wav: ArrayBuffer} | {id, error: string}. The parent
// owns the output directory (workerData.dir): it creates it and removes it on close.
import { parentPort, workerData } from 'node:worker_threads';
import { WASI } from 'node:wasi';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectGarbage } from '../../lib/idle-memory.ts';

interface Job {
  id: number;
  voice: string;
  text: string;
  /** Lexicon addenda, Flite's `-add_lex` file format, for this synthesis only. */
  lexicon?: string;
  /** Flite's `duration_stretch` feature: 2 says every phone twice as long. */
  durationStretch?: number;
}

/** WASI numbers preopened directories from 3, after stdin, stdout and stderr. */
const OUT_DIR_FD = 3;

const { wasmPath, dir } = workerData as { wasmPath: string; dir: string };
const modulePromise = WebAssembly.compile(readFileSync(wasmPath));

async function run(job: Job): Promise<ArrayBuffer> {
  const mod = await modulePromise;
  const out = `/out/${job.id}.wav`;
  const args = ['flite', '-voice', job.voice];
  // Each job is a fresh instance, so a lexicon or a stretch never outlives its synthesis.
  if (job.lexicon) {
    writeFileSync(join(dir, `${job.id}.lex`), job.lexicon);
    args.push('-add_lex', `/out/${job.id}.lex`);
  }
  if (job.durationStretch !== undefined) args.push('--setf', `duration_stretch=${job.durationStretch}`);
  const wasi = new WASI({
    version: 'preview1',
    args: [...args, '-t', job.text, '-o', out],
    preopens: { '/out': dir },
    returnOnExit: true,
  });
  try {
    const instance = await WebAssembly.instantiate(mod, wasi.getImportObject() as WebAssembly.Imports);
    const rc = wasi.start(instance);
    if (rc !== 0) throw new Error(`flite exited with ${rc}`);
  } finally {
    if (job.lexicon) rmSync(join(dir, `${job.id}.lex`), { force: true });
    // Node's WASI opens the preopened directory per instance and closes it only when the instance
    // is garbage-collected, which in practice never happens here: without this every synthesis
    // leaked one open file until the process ended (measured: 400 syntheses, 400 open files).
    try {
      (wasi.wasiImport['fd_close'] as (fd: number) => number)(OUT_DIR_FD);
    } catch {
      // Instantiation failed (out of memory), so start() never ran and WASI refuses calls: this
      // one directory stays open until the instance is collected.
    }
  }
  const file = join(dir, `${job.id}.wav`);
  const wav = readFileSync(file);
  rmSync(file, { force: true });
  return wav.buffer.slice(wav.byteOffset, wav.byteOffset + wav.byteLength);
}

/**
 * How long the thread waits with no synthesis before it collects its garbage, ms. Each synthesis's
 * instance keeps its WebAssembly memory (about 17 MB) until the instance is collected, and this
 * thread's JS heap stays so small that V8 rarely collects by itself: 3-5 dead memories stayed
 * resident (50-85 MB; BENCHMARKS.md, "Memory after the calls"). A full collection of this small
 * heap takes a few ms, on this thread, between replies.
 */
const COLLECT_WHEN_IDLE_MS = 1_000;
/**
 * The second collection, ms after the first: the first runs the weak callbacks of WASI's native
 * objects, which hold the instances until then (measured: one collection left 2 of 5 memories,
 * two left none).
 */
const SECOND_COLLECTION_MS = 100;
let running = 0;
let idle: ReturnType<typeof setTimeout> | undefined;

/** Collects twice while no synthesis runs; a synthesis arriving in between cancels the rest. */
function collectWhenIdle(delayMs: number, then?: number): void {
  idle = setTimeout(() => {
    collectGarbage();
    if (then !== undefined) collectWhenIdle(then);
  }, delayMs);
  idle.unref();
}

parentPort?.on('message', (job: Job) => {
  running++;
  clearTimeout(idle);
  run(job)
    .then(
      (wav) => parentPort?.postMessage({ id: job.id, wav }, [wav]),
      (e: unknown) => parentPort?.postMessage({ id: job.id, error: e instanceof Error ? e.message : String(e) }),
    )
    .finally(() => {
      if (--running === 0) collectWhenIdle(COLLECT_WHEN_IDLE_MS, SECOND_COLLECTION_MS);
    });
});
