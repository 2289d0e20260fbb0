// Worker thread that runs Flite (WASI) so synthesis never blocks the event loop that paces audio.
// Protocol: in {id, voice, text, lexicon?, durationStretch?} (flite.lexicon.ts); out {id, wav: ArrayBuffer} | {id, error: string}. The parent
// owns the output directory (workerData.dir): it creates it and removes it on close.
import { parentPort, workerData } from 'node:worker_threads';
import { WASI } from 'node:wasi';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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

parentPort?.on('message', (job: Job) => {
  run(job).then(
    (wav) => parentPort?.postMessage({ id: job.id, wav }, [wav]),
    (e: unknown) => parentPort?.postMessage({ id: job.id, error: e instanceof Error ? e.message : String(e) }),
  );
});
