// Worker thread that runs Flite (WASI) so synthesis never blocks the event loop that paces audio.
// Protocol: in {id, voice, text}; out {id, wav: ArrayBuffer} | {id, error: string}.
import { parentPort, workerData } from 'node:worker_threads';
import { WASI } from 'node:wasi';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Job {
  id: number;
  voice: string;
  text: string;
}

const wasmPath = (workerData as { wasmPath: string }).wasmPath;
const dir = mkdtempSync(join(tmpdir(), 'switchboard-flite-'));
const modulePromise = WebAssembly.compile(readFileSync(wasmPath));

async function run(job: Job): Promise<ArrayBuffer> {
  const mod = await modulePromise;
  const out = `/out/${job.id}.wav`;
  const wasi = new WASI({
    version: 'preview1',
    args: ['flite', '-voice', job.voice, '-t', job.text, '-o', out],
    preopens: { '/out': dir },
    returnOnExit: true,
  });
  const instance = await WebAssembly.instantiate(mod, wasi.getImportObject() as WebAssembly.Imports);
  const rc = wasi.start(instance);
  if (rc !== 0) throw new Error(`flite exited with ${rc}`);
  const file = join(dir, `${job.id}.wav`);
  const wav = readFileSync(file);
  rmSync(file, { force: true });
  return wav.buffer.slice(wav.byteOffset, wav.byteOffset + wav.byteLength);
}

parentPort?.on('message', (job: Job | 'close') => {
  if (job === 'close') {
    rmSync(dir, { recursive: true, force: true });
    parentPort?.close();
    return;
  }
  run(job).then(
    (wav) => parentPort?.postMessage({ id: job.id, wav }, [wav]),
    (e: unknown) => parentPort?.postMessage({ id: job.id, error: e instanceof Error ? e.message : String(e) }),
  );
});
