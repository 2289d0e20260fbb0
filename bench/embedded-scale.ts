/**
 * Embedded engines at scale (issue 25, item 5): where a PocketSphinx call's memory and CPU go, and
 * what the shared decoder pool holds.
 *
 *   (1) profile, in a child process of its own: the RSS a worker thread adds bare, with koffi and
 *       the libraries loaded, and with one loaded decoder (which is what each call cost when every
 *       call had a thread and a decoder of its own); what stays after such threads are ended
 *       without freeing; CPU per second of speech decoded.
 *   (2) calls through the real server (bench/voice.ts's embedded server: fvad, PocketSphinx in
 *       library mode, Flite kal16, a one-node flow): the server's RSS idle (warm decoders
 *       loaded), one call alone (the baseline), `calls` at once, each caller speaking every few
 *       seconds, and again once the calls have ended and idle decoders were freed; e2e latency of
 *       each turn from the call objects.
 *
 * `node bench/embedded-scale.ts` runs it alone; `runEmbeddedScaleBench(options)` returns markdown.
 */
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { fmt, machine, percentile } from './lib.ts';
import type { MemoryBreakdown } from './memory-breakdown.ts';
import { runCall, startServed, type CallResult } from './voice.ts';
import { concat, silence } from '../test/voice/harness.ts';

export interface EmbeddedScaleOptions {
  /** Concurrent calls; default 24. */
  calls?: number;
  /** Turns per call; default 4. */
  turns?: number;
  /** Pause after each reply before the caller speaks again, ms; default 2500. */
  gapMs?: number;
  log?: (line: string) => void;
}

const SELF = fileURLToPath(import.meta.url);

function rssMb(pid: number | 'self' = 'self'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}

async function flite(text: string): Promise<Int16Array> {
  const { FliteTts } = await import('../src/providers/flite/flite.tts.ts');
  const tts = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  await tts.close();
  return concat(...parts);
}

// --- (1) profile, in a child ------------------------------------------------------------------

interface Profile {
  bareWorkerMb: number;
  koffiWorkerMb: number;
  decoderWorkerMb: number;
  leftAfterTerminateMb: number;
  pooledDecoderMb: number;
  leftAfterPoolCloseMb: number;
  cpuMsPerSpeechS: number;
  realTimeFactor: number;
}

async function profile(): Promise<Profile> {
  const { PocketsphinxStt, DEBIAN_MODEL_DIR } = await import('../src/providers/pocketsphinx/pocketsphinx.stt.ts');
  const koffiPath = fileURLToPath(new URL('../node_modules/koffi', import.meta.url));
  const m = DEBIAN_MODEL_DIR;
  const args = ['-hmm', `${m}/en-us`, '-lm', `${m}/en-us.lm.bin`, '-dict', `${m}/cmudict-en-us.dict`, '-fwdflat', 'no', '-logfn', '/dev/null'];
  // The thread a call had before the pool: koffi, the libraries, one decoder, never freed when terminated.
  const code = `
    const { parentPort, workerData: { stage, args, koffiPath } } = require('node:worker_threads');
    if (stage >= 1) {
      const koffi = require(koffiPath);
      const sb = koffi.load('libsphinxbase.so.3'), ps = koffi.load('libpocketsphinx.so.3');
      if (stage >= 2) {
        const config = sb.func('void *cmd_ln_parse_r(void *, void *, int, const char **, int)')(null, ps.func('void *ps_args(void)')(), args.length, args, 1);
        globalThis.decoder = ps.func('void *ps_init(void *)')(config);
      }
    }
    parentPort.postMessage('ready');
    setInterval(() => {}, 1e6);`;
  const settle = () => new Promise((r) => setTimeout(r, 300));
  const added = async (stage: number, n: number): Promise<{ per: number; left: number }> => {
    const before = rssMb();
    const workers = [];
    for (let i = 0; i < n; i++) {
      const w = new Worker(code, { eval: true, workerData: { stage, args, koffiPath } });
      await new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => reject(new Error(`profile worker exited ${code}`)));
      });
      workers.push(w);
    }
    await settle();
    const per = (rssMb() - before) / n;
    for (const w of workers) await w.terminate();
    await settle();
    return { per, left: rssMb() - before };
  };
  const bare = await added(0, 4);
  const withKoffi = await added(1, 4);
  const decoder = await added(2, 2);

  // The pool's decoder: loaded, used, freed (ps_free, malloc_trim) when the pool closes.
  const speech = concat(silence(200), await flite('i would like to buy something'), silence(600));
  // Library mode's dictionary (the language model's words) is written once per process, before the first decoder: not the decoder's memory.
  const { languageModelDictionary } = await import('../src/providers/pocketsphinx/vocabulary.ts');
  languageModelDictionary(`${m}/en-us.lm.bin`, `${m}/cmudict-en-us.dict`);
  const before = rssMb();
  const stt = new PocketsphinxStt({ mode: 'library' });
  const s = await stt.openStream();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let speechMs = 0;
  for (let rep = 0; rep < 4; rep++) {
    for (let i = 0; i < speech.length; i += 320) s.write(speech.subarray(i, i + 320));
    await s.finalize();
    speechMs += (speech.length / 16_000) * 1000;
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const pooled = rssMb() - before;
  await s.close();
  await stt.close();
  await settle();
  return {
    bareWorkerMb: bare.per,
    koffiWorkerMb: withKoffi.per,
    decoderWorkerMb: decoder.per,
    leftAfterTerminateMb: decoder.left / 2,
    pooledDecoderMb: pooled,
    leftAfterPoolCloseMb: rssMb() - before,
    cpuMsPerSpeechS: (cpu.user + cpu.system) / 1000 / (speechMs / 1000),
    realTimeFactor: wallMs / speechMs,
  };
}

async function profiled(): Promise<Profile> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [SELF, '--profile'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((r) => child.once('exit', r));
  return JSON.parse(out.trim().split('\n').at(-1)!) as Profile;
}

// --- (2) calls through the server --------------------------------------------------------------

/** The server's memory at each moment, by where it is (bench/memory-breakdown.ts), MB. */
function breakdownTable(rows: Array<[string, MemoryBreakdown]>): string {
  const cell = (m: MemoryBreakdown) => {
    const r = m.resident;
    const malloc = m.malloc ? `${fmt(m.malloc.arenaMb, 0)} / ${fmt(m.malloc.inUseMb, 0)} / ${fmt(m.malloc.mmappedMb, 0)}` : '-';
    return `| ${fmt(m.rssMb, 0)} | ${m.threads} | ${fmt(m.v8.heapUsedMb, 0)} / ${fmt(m.v8.heapTotalMb, 0)} / ${fmt(m.v8.externalMb, 0)} / ${fmt(m.v8.arrayBuffersMb, 0)} | ${malloc} | ${fmt(r.brkHeapMb, 0)} | ${fmt(r.arenaHeapsMb, 0)} (${r.arenaHeaps}) | ${fmt(r.wasmMb, 0)} (${r.wasmMemories}) | ${fmt(r.otherAnonMb, 0)} | ${fmt(r.filesMb, 0)} |`;
  };
  return [
    '| server memory (MB) | RSS | threads | V8 heap used / total / external / array buffers | malloc arenas / in use / own mappings (mallinfo2) | resident: sbrk heap | thread arenas\' heaps (count) | WASM memories (count) | other anonymous (V8 pages, stacks, big mallocs) | files |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(([label, m]) => `| ${label} ${cell(m)}`),
  ].join('\n');
}

function stats(values: number[]): { p50: number; p90: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), n: sorted.length };
}

/**
 * Samples `pid`'s RSS every 250 ms while `work` runs; resolves with its result and the peak, and,
 * given `breakdown`, the server's own account of its memory (read every 2 s) at the highest RSS
 * so read.
 */
async function peakWhile<T>(pid: number, work: Promise<T>, breakdown?: () => Promise<MemoryBreakdown>): Promise<{ result: T; peakMb: number; atPeak: MemoryBreakdown | undefined }> {
  let peakMb = rssMb(pid);
  let atPeak: MemoryBreakdown | undefined;
  let reading = false;
  const timer = setInterval(() => (peakMb = Math.max(peakMb, rssMb(pid))), 250);
  const sampler = setInterval(() => {
    if (!breakdown || reading) return;
    reading = true;
    breakdown()
      .then((m) => {
        if (!atPeak || m.rssMb > atPeak.rssMb) atPeak = m;
      })
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 2_000);
  try {
    return { result: await work, peakMb, atPeak };
  } finally {
    clearInterval(timer);
    clearInterval(sampler);
  }
}

export async function runEmbeddedScaleBench(options: EmbeddedScaleOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const calls = options.calls ?? 24;
  const turns = options.turns ?? 4;
  const gapMs = options.gapMs ?? 2500;
  const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' / ');

  log('embedded-scale (1): profile');
  const p = await profiled();

  log('embedded-scale (2): calls through the server');
  const said = await flite('i would like to buy something');
  const speech = concat(said, new Int16Array(16_000 * 1.2));
  const speechMs = (said.length / 16_000) * 1000;
  const loadAtStart = load();
  const s = await startServed('embedded');
  const pid = s.child.pid!;
  try {
    await new Promise((r) => setTimeout(r, 4_000)); // the warm decoder loads
    // Idle as the server is after calls: its start's garbage collected (it does so itself once its
    // calls have ended: src/lib/idle-memory.ts), the pages freed given back.
    await s.memory(true);
    await new Promise((r) => setTimeout(r, 2_000));
    const idleMb = rssMb(pid);
    const idleMemory = await s.memory();
    log('embedded-scale (2): one call (baseline)');
    const one = await peakWhile(pid, runCall(s, speech, speechMs, turns, gapMs));
    log(`embedded-scale (2): ${calls} calls at once`);
    const failed = (): CallResult => ({ ok: false, reason: 'client_failed', e2e: [], client: [], asr: [], tts: [], media: null, durationMs: 0 });
    const loadBefore = load();
    const many = await peakWhile(
      pid,
      Promise.all(
        Array.from({ length: calls }, async (_, i) => {
          await new Promise((r) => setTimeout(r, (i * gapMs) / calls)); // callers do not all speak at once
          return runCall(s, speech, speechMs, turns, gapMs).catch(failed);
        }),
      ),
      () => s.memory(),
    );
    const loadAfter = load();
    const endMemory = await s.memory();
    // Decoders behind real time finish their queued audio first, then are freed 10 s after they
    // fall idle: wait for the RSS to come back within 50 MB of idle, at most 60 s.
    log('embedded-scale (2): after the calls, waiting for idle decoders to be freed');
    const ended = performance.now();
    while (performance.now() - ended < 60_000 && rssMb(pid) > idleMb + 50) await new Promise((r) => setTimeout(r, 1_000));
    const afterMb = rssMb(pid);
    const afterS = (performance.now() - ended) / 1000;
    const afterMemory = await s.memory();
    const collected = await s.memory(true);
    const base = stats(one.result.e2e);
    const e2e = stats(many.result.flatMap((r) => r.e2e));
    const notOk = many.result.filter((r) => !r.ok).length;
    const perCall = (many.peakMb - idleMb) / calls;
    return [
      `Machine: ${machine()}. Load average (1/5/15 min) at the start ${loadAtStart}; before the ${calls} calls ${loadBefore}, after ${loadAfter}.`,
      '',
      '| profile (a child process of its own) | figure |',
      '|---|---|',
      `| a worker thread, bare (its V8 isolate) | ${fmt(p.bareWorkerMb, 1)} MB |`,
      `| a worker thread with koffi and libpocketsphinx loaded | ${fmt(p.koffiWorkerMb, 1)} MB |`,
      `| a worker thread with one loaded decoder (a call's cost before the pool) | ${fmt(p.decoderWorkerMb, 1)} MB |`,
      `| left behind per such thread once terminated (its decoder never freed) | ${fmt(p.leftAfterTerminateMb, 1)} MB |`,
      `| the pool's decoder, loaded and decoding | ${fmt(p.pooledDecoderMb, 1)} MB |`,
      `| left once the pool is closed (ps_free, malloc_trim) | ${fmt(p.leftAfterPoolCloseMb, 1)} MB |`,
      `| CPU per second of speech decoded (one stream, as fast as it goes) | ${fmt(p.cpuMsPerSpeechS, 0)} ms (real-time factor ${fmt(p.realTimeFactor, 2)}) |`,
      '',
      `| calls through the server (${turns} turns each, ${fmt(gapMs / 1000, 1)} s between a reply and the next turn) | e2e p50 / p90 (ms) | turns | failed calls | server RSS (MB) |`,
      '|---|---|---|---|---|',
      `| idle, warm decoder loaded | | | | ${fmt(idleMb, 0)} |`,
      `| 1 call (baseline) | ${fmt(base.p50, 0)} / ${fmt(base.p90, 0)} | ${base.n} | ${one.result.ok ? 0 : 1} | peak ${fmt(one.peakMb, 0)} |`,
      `| ${calls} calls at once | ${fmt(e2e.p50, 0)} / ${fmt(e2e.p90, 0)} | ${e2e.n} | ${notOk} | peak ${fmt(many.peakMb, 0)} |`,
      `| ${fmt(afterS, 0)} s after the calls ended | | | | ${fmt(afterMb, 0)} |`,
      '',
      breakdownTable([
        ['idle', idleMemory],
        ...(many.atPeak ? [[`at the highest RSS read during the ${calls} calls (read every 2 s)`, many.atPeak] as [string, MemoryBreakdown]] : []),
        [`as the ${calls} calls ended`, endMemory],
        [`${fmt(afterS, 0)} s after`, afterMemory],
        ['... then after a full garbage collection of the main thread', collected],
      ]),
      '',
      `Added RSS per call at ${calls} calls: **${fmt(perCall, 1)} MB** (target <= 30); after the calls: **${fmt(afterMb - idleMb, 0)} MB** above idle (target <= 50); ` +
        `e2e p90 at ${calls} calls: **${fmt(e2e.p90, 0)} ms** (target < 800), ${fmt(e2e.p90 / base.p90, 2)} x the one-call p90.`,
    ].join('\n');
  } finally {
    await s.stop();
  }
}

if (process.argv[1] === SELF) {
  if (process.argv.includes('--profile')) process.stdout.write(`${JSON.stringify(await profile())}\n`);
  else process.stdout.write(`${await runEmbeddedScaleBench()}\n`);
}
